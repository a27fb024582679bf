package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/leftover"
)

// Postgres is a store in its own schema of a PostgreSQL database, created
// when it opens and dropped when it closes. Each consumer instance's
// transaction runs on a connection of its own (a pool of conns), so
// concurrent instances race as they would in production. pgx prepares and
// caches each statement per connection.
//
// The per-message transactions use pgx's own API on its pool: database/sql
// adds a pool checkout, a session reset and a goroutine per transaction,
// which on PostgreSQL cost about as much as the statements. Setup and the
// audit go through database/sql over the same pool.
type Postgres struct {
	pool   *pgxpool.Pool
	db     *sql.DB
	schema string
	addr   string
	url    string // with its password: for the leftover ledger only
	// psql is the command line that reaches the same database, for the
	// message when a schema is left behind.
	psql string

	rebind sync.Map // portable query → the same with $n placeholders

	mu     sync.Mutex
	closed bool
}

var (
	_ Store = (*Postgres)(nil)
	_ Tx    = (*postgresTx)(nil)
)

// schemaName is what a store's schema may be called: lower-case letters,
// digits and _, at most PostgreSQL's 63 bytes.
var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// schemaPrefix starts every schema dqbench creates; no other schema is
// ever dropped by a sweep.
const schemaPrefix = "dqbench_"

// SchemaFor turns a run's variant name into a schema name: "dqbench_" and
// the name in lower case with every other character as _.
func SchemaFor(name string) string {
	var b strings.Builder
	b.WriteString(schemaPrefix)
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > 63 {
		// Keep names distinct past PostgreSQL's 63 bytes: the run and
		// variant numbers are at the end, so hash the whole name.
		h := fnv.New64a()
		h.Write([]byte(name))
		s = fmt.Sprintf("%s_%016x", s[:46], h.Sum64())
	}
	return s
}

// pingTimeout bounds how long an unreachable server is waited for.
const pingTimeout = 5 * time.Second

// OpenPostgres creates schema in the database at url (a postgres:// URL or
// a key=value connection string) and the business tables in it; conns
// bounds the connections (one per consumer instance, plus one).
func OpenPostgres(ctx context.Context, url, schema string, conns int) (*Postgres, error) {
	if !schemaName.MatchString(schema) {
		return nil, fmt.Errorf("schema name %q: use lower-case letters, digits and _", schema)
	}
	if _, err := catalog.ParseURL(url); err != nil && strings.Contains(url, "://") {
		return nil, fmt.Errorf("store URL %s: %v", catalog.MaskURL(url), err)
	}
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx hides a password it can find; a malformed one it may not.
		return nil, fmt.Errorf("store URL: %s", catalog.MaskURLs(err.Error()))
	}
	cfg := pcfg.ConnConfig
	addr := fmt.Sprintf("%s:%d", cfg.Host, cfg.Port)
	cfg.ConnectTimeout = pingTimeout
	// Every connection works in the run's schema.
	cfg.RuntimeParams["search_path"] = schema
	// A commit survives a crash of the consumer process but is not flushed
	// to disk before COMMIT returns: what SQLite's synchronous=NORMAL in WAL
	// mode gives too, so the two stores are compared on equal terms.
	cfg.RuntimeParams["synchronous_commit"] = "off"
	pcfg.MaxConns = int32(max(conns, 1) + 1)
	pcfg.MinConns = 0
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("store URL: %w", err)
	}
	db := stdlib.OpenDBFromPool(pool)
	p := &Postgres{pool: pool, db: db, schema: schema, addr: addr, url: url,
		psql: fmt.Sprintf("psql -h %s -p %d -U %s -d %s", cfg.Host, cfg.Port, cfg.User, cfg.Database)}

	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		db.Close()
		pool.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err() // the run ended (another variant failed): not this server's fault
		}
		return nil, postgresUnusable(cfg, err)
	}
	if _, err := db.ExecContext(ctx, `CREATE SCHEMA `+schema); err != nil {
		db.Close()
		pool.Close()
		if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "42501" {
			return nil, postgresUnusable(cfg, err)
		}
		return nil, fmt.Errorf("create schema %s on PostgreSQL at %s: %w", schema, addr, err)
	}
	leftover.Note(leftover.Entry{Kind: leftover.Schema, Where: url, Name: schema})
	if err := createBusiness(ctx, p, postgresDialect); err != nil {
		return nil, errors.Join(fmt.Errorf("create store tables in schema %s: %w", schema, err), p.Close())
	}
	return p, nil
}

// Unreachable is the error for a store server that does not answer
// (ErrUnreachable and ErrUnusable): what, where, and how to start one.
func Unreachable(what, addr string, err error, hint string) error {
	msg := err.Error()
	var oe *net.OpError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		msg = fmt.Sprintf("no answer within %s", pingTimeout)
	case errors.As(err, &oe):
		msg = oe.Error() // "dial tcp ADDR: connect: connection refused"
	}
	// pgx lists one line per address it tried; the first says enough.
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		if rest := strings.TrimSpace(msg[i+1:]); rest != "" {
			msg = strings.SplitN(rest, "\n", 2)[0]
		}
	}
	return &unusableError{msg: fmt.Sprintf("cannot reach %s at %s: %s; %s", what, addr, catalog.MaskURLs(msg), hint), unreachable: true}
}

// Schema is the schema the store created.
func (p *Postgres) Schema() string { return p.schema }

func (p *Postgres) sql(query string) string {
	if q, ok := p.rebind.Load(query); ok {
		return q.(string)
	}
	q := postgresDialect.rebind(query)
	p.rebind.Store(query, q)
	return q
}

// Setup runs ddl in the store's schema.
func (p *Postgres) Setup(ctx context.Context, ddl ...string) error {
	for _, q := range ddl {
		if _, err := p.db.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// Tx runs fn in a READ COMMITTED transaction (PostgreSQL's default, and
// what most services run with) on a connection of its own. Every statement
// runs with ctx (pgx watches it with context.AfterFunc, no goroutine per
// statement), so a server that stops answering ends the transaction by the
// run's deadline or at Ctrl-C, with an error naming the server.
func (p *Postgres) Tx(ctx context.Context, fn func(Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		return p.stalled(ctx, err)
	}
	if err := fn(&postgresTx{p: p, tx: tx, ctx: ctx}); err != nil {
		// The rollback gets a moment of its own: ctx may be what ended fn.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		return p.stalled(ctx, errors.Join(err, tx.Rollback(rctx)))
	}
	return p.stalled(ctx, tx.Commit(ctx))
}

// stalled names the server when ctx ended a store call: the store is what
// stopped answering, not the broker.
func (p *Postgres) stalled(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("%w: %w: PostgreSQL at %s did not answer before the run's deadline or Ctrl-C (%v)", ErrStalled, ctx.Err(), p.addr, err)
	}
	return err
}

type postgresTx struct {
	p   *Postgres
	tx  pgx.Tx
	ctx context.Context
}

func (t *postgresTx) Exec(query string, args ...any) (int64, error) {
	tag, err := t.tx.Exec(t.ctx, t.p.sql(query), args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

func (t *postgresTx) QueryInt(query string, args ...any) (int64, bool, error) {
	var n *int64 // NULL scans as nil, as sql.NullInt64 does for SQLite
	switch err := t.tx.QueryRow(t.ctx, t.p.sql(query), args...).Scan(&n); {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, err
	case n == nil:
		return 0, true, nil
	}
	return *n, true, nil
}

func (t *postgresTx) Apply(e Effect) error { return apply(t, e) }

// Audit reads the ledger and checks the balances.
func (p *Postgres) Audit(ctx context.Context) (history.Audit, error) {
	return audit(ctx, p.db)
}

// countBy runs query, which returns rows of (intent, n), into a map.
func (p *Postgres) countBy(ctx context.Context, query string) (map[int]int, error) {
	return countBy(ctx, p.db, query)
}

// closeTimeout bounds removing what a store made on its server: a server
// that stopped answering must not hold the end of the run up for long.
const closeTimeout = 2 * time.Second

// Close drops the store's schema, with everything in it, and closes the
// connections, giving the drop closeTimeout. A failed drop wraps
// ErrCleanup. A second Close does nothing.
func (p *Postgres) Close() error {
	return p.CloseBy(context.Background())
}

// CloseBy is Close with the drop bounded by ctx too (the run's hard
// deadline, Ctrl-C).
func (p *Postgres) CloseBy(ctx context.Context) error {
	p.mu.Lock()
	closed := p.closed
	p.closed = true
	p.mu.Unlock()
	if closed {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, closeTimeout)
	defer cancel()
	var err error
	if _, derr := p.db.ExecContext(ctx, `DROP SCHEMA IF EXISTS `+p.schema+` CASCADE`); derr != nil {
		err = fmt.Errorf("%w: schema %s was left on PostgreSQL at %s (%v); remove it with: %s -c 'DROP SCHEMA %s CASCADE' (or dqbench clean)",
			ErrCleanup, p.schema, p.addr, derr, p.psql, p.schema)
	} else {
		leftover.Forget(leftover.Entry{Kind: leftover.Schema, Where: p.url, Name: p.schema})
	}
	err = errors.Join(err, p.db.Close())
	// Closing the pool waits for every connection's cleanup, which, after
	// a query the end of the run cut short, sends the server a cancel
	// request and gives it 15 s: a server that stopped answering would
	// hold the run that long past its deadline. It is left to finish on
	// its own then.
	poolClosed := make(chan struct{})
	go func() {
		p.pool.Close()
		close(poolClosed)
	}()
	select {
	case <-poolClosed:
	case <-ctx.Done():
	}
	return err
}

// DropSchema drops schema from the database at url: what dqbench clean
// does with a schema a killed run left.
func DropSchema(ctx context.Context, url, schema string) error {
	if !schemaName.MatchString(schema) || !strings.HasPrefix(schema, schemaPrefix) {
		return fmt.Errorf("schema name %q: not one dqbench makes", schema)
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return fmt.Errorf("store URL: %s", catalog.MaskURLs(err.Error()))
	}
	cfg.ConnectTimeout = pingTimeout
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+schema+` CASCADE`)
	return err
}
