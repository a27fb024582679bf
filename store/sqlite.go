package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"sync"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/dqbench/dqbench/history"
)

// SQLitePragmas are the settings every dqbench SQLite store opens with:
// WAL with synchronous=NORMAL survives a process crash (a killed consumer
// loses nothing committed; only an OS crash could), the one connection holds
// the database exclusively, and checkpoints run every 10,000 pages instead
// of 1,000.
var SQLitePragmas = []string{
	"journal_mode(WAL)",
	"synchronous(NORMAL)",
	"busy_timeout(10000)",
	"locking_mode(EXCLUSIVE)",
	"wal_autocheckpoint(10000)",
}

// SQLite is a store in one SQLite file, written through one connection with
// prepared statements. Transactions from several consumer instances take
// turns.
type SQLite struct {
	db   *sql.DB
	conn *sql.Conn
	path string

	mu    sync.Mutex // one transaction at a time
	stmts map[string]*sql.Stmt
}

var (
	_ Store = (*SQLite)(nil)
	_ Tx    = (*sqliteTx)(nil)
)

// OpenSQLite creates (or opens) the SQLite database at path and its business
// tables.
func OpenSQLite(ctx context.Context, path string) (*SQLite, error) {
	q := url.Values{}
	for _, p := range SQLitePragmas {
		q.Add("_pragma", p)
	}
	// The path is escaped: in a file: URI a "#" or "?" would end it, and
	// the database would silently be another file.
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	s := &SQLite{db: db, conn: conn, path: path, stmts: map[string]*sql.Stmt{}}
	err = createBusiness(ctx, s, sqliteDialect)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("create store tables in %s: %w", path, err)
	}
	return s, nil
}

// Setup runs ddl on the store's connection.
func (s *SQLite) Setup(ctx context.Context, ddl ...string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, q := range ddl {
		if _, err := s.conn.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// Tx runs fn between BEGIN IMMEDIATE and COMMIT. Statements run with a
// context that is never cancelled: the modernc driver would otherwise watch
// each statement's context in a goroutine of its own. Nothing can make them
// wait: the connection holds the file's lock from open to close
// (locking_mode EXCLUSIVE), so no other process can take it, and there is
// no server to stop answering. (A filesystem that hangs would; dqbench
// writes its SQLite files in the run's temporary directory.)
func (s *SQLite) Tx(ctx context.Context, fn func(Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	bg := context.Background()
	if _, err := s.conn.ExecContext(bg, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	if err := fn(&sqliteTx{s: s}); err != nil {
		_, rerr := s.conn.ExecContext(bg, "ROLLBACK")
		return errors.Join(err, rerr)
	}
	_, err := s.conn.ExecContext(bg, "COMMIT")
	return err
}

type sqliteTx struct{ s *SQLite }

func (t *sqliteTx) stmt(query string) (*sql.Stmt, error) {
	st, ok := t.s.stmts[query]
	if !ok {
		var err error
		if st, err = t.s.conn.PrepareContext(context.Background(), query); err != nil {
			return nil, err
		}
		t.s.stmts[query] = st
	}
	return st, nil
}

func (t *sqliteTx) Exec(query string, args ...any) (int64, error) {
	st, err := t.stmt(query)
	if err != nil {
		return 0, err
	}
	res, err := st.ExecContext(context.Background(), args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (t *sqliteTx) QueryInt(query string, args ...any) (int64, bool, error) {
	st, err := t.stmt(query)
	if err != nil {
		return 0, false, err
	}
	return scanInt(st.QueryRowContext(context.Background(), args...))
}

// scanInt reads one integer from row, or reports that there was no row.
func scanInt(row *sql.Row) (int64, bool, error) {
	var n sql.NullInt64
	switch err := row.Scan(&n); {
	case errors.Is(err, sql.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, err
	}
	return n.Int64, true, nil
}

func (t *sqliteTx) Apply(e Effect) error { return apply(t, e) }

// apply is the business effect in portable SQL, for every store.
func apply(tx Tx, e Effect) error {
	if _, err := tx.Exec(`UPDATE accounts SET balance = balance + ? WHERE id = ?`, e.Amount, e.Account); err != nil {
		return fmt.Errorf("apply effect of intent %d: %w", e.Intent, err)
	}
	if _, err := tx.Exec(`INSERT INTO ledger (intent, account, amount) VALUES (?, ?, ?)`, e.Intent, e.Account, e.Amount); err != nil {
		return fmt.Errorf("record effect of intent %d: %w", e.Intent, err)
	}
	return nil
}

// Audit reads the ledger and checks the balances.
func (s *SQLite) Audit(ctx context.Context) (history.Audit, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return audit(ctx, s.conn)
}

// Close releases the statements and the database. The checkpoint SQLite
// runs as the connection closes skips its two fsyncs (synchronous OFF):
// the store has been audited by then, and its file goes with the run's
// temporary directory right after (about 14 ms of a 20,000-intent run).
func (s *SQLite) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = s.conn.ExecContext(context.Background(), "PRAGMA synchronous=OFF") // best effort: the close below reports what matters
	for _, st := range s.stmts {
		st.Close()
	}
	s.stmts = nil
	return errors.Join(s.conn.Close(), s.db.Close())
}

// querier is what the audit needs of a connection.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// countBy runs query, which returns rows of (intent, n), into a map.
func countBy(ctx context.Context, q querier, query string) (map[int]int, error) {
	out := map[int]int{}
	rows, err := q.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var intent, n int
		if err := rows.Scan(&intent, &n); err != nil {
			return nil, err
		}
		out[intent] = n
	}
	return out, rows.Err()
}

// countBy runs query, which returns rows of (intent, n), into a map.
func (s *SQLite) countBy(ctx context.Context, query string) (map[int]int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return countBy(ctx, s.conn, query)
}

// Intents runs query, which returns one column of intents, and lists them
// in the order it returns them.
func (s *SQLite) Intents(ctx context.Context, query string) ([]int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rows, err := s.conn.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var intent int
		if err := rows.Scan(&intent); err != nil {
			return nil, err
		}
		out = append(out, intent)
	}
	return out, rows.Err()
}

// audit reads the final state of the business tables (portable SQL): one
// pass over the ledger (tallyLedger), then the accounts whose balance is
// not the sum of their ledger rows. (Two GROUP BY queries cost a sort and
// a second pass: about 30 ms of a 20,000-intent run on SQLite, against
// about 12.)
func audit(ctx context.Context, q querier) (history.Audit, error) {
	applied, sums, err := tallyLedger(ctx, q)
	if err != nil {
		return history.Audit{}, fmt.Errorf("audit ledger: %w", err)
	}
	a := history.Audit{Applied: applied}
	rows, err := q.QueryContext(ctx, `SELECT id, balance FROM accounts ORDER BY id`)
	if err != nil {
		return a, fmt.Errorf("audit balances: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int
		var balance int64
		if err := rows.Scan(&id, &balance); err != nil {
			return a, fmt.Errorf("audit balances: %w", err)
		}
		if balance != sums[id] {
			a.BalanceMismatch = append(a.BalanceMismatch, id)
		}
	}
	return a, rows.Err()
}

// tallyLedger counts the ledger's rows per intent and sums its amounts per
// account, in one pass.
func tallyLedger(ctx context.Context, q querier) (applied map[int]int, sums map[int]int64, err error) {
	rows, err := q.QueryContext(ctx, `SELECT intent, account, amount FROM ledger`)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	applied, sums = map[int]int{}, map[int]int64{}
	for rows.Next() {
		var intent, account int
		var amount int64
		if err := rows.Scan(&intent, &account, &amount); err != nil {
			return nil, nil, err
		}
		applied[intent]++
		sums[account] += amount
	}
	return applied, sums, rows.Err()
}
