package bench

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// The broker settings both sides use; they match the pipeline scenario and
// what brokers/kafka sets.
const (
	window   = 256 // producer: most records buffered unconfirmed
	prefetch = 100 // consumer: most records per poll
	accounts = 16  // account rows the amounts spread over, as store.Accounts
	topic    = "raw"
	group    = "raw-group"
)

// producerOpts are the pipeline's producer settings: idempotent (kgo's
// default), acks all, window 256, linger 0, no compression, sticky key
// partitioner, and brokers/kafka's short retry backoff.
func producerOpts(seeds []string) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.MaxBufferedRecords(window),
		kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
		kgo.RetryBackoffFn(func(int) time.Duration { return 2 * time.Millisecond }),
	}
}

// consumerOpts are the pipeline's consumer settings: a group reading from
// the start, autocommit disabled, FetchMaxWait 50ms.
func consumerOpts(seeds []string) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(50 * time.Millisecond),
	}
}

// intent is the message body, as the pipeline's.
type intent struct {
	Intent  int   `json:"intent"`
	Account int   `json:"account"`
	Amount  int64 `json:"amount"`
}

func newIntent(i int) intent {
	return intent{Intent: i, Account: i % accounts, Amount: int64(i%100) + 1}
}

// startBroker starts a one-broker kfake cluster with the topic created, and
// returns it with its seeds.
func startBroker(ctx context.Context) (*kfake.Cluster, []string, error) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		return nil, nil, err
	}
	seeds := c.ListenAddrs()
	adm, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	defer adm.Close()
	resp, err := kadm.NewClient(adm).CreateTopic(ctx, 1, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("create topic: %w", err)
	}
	return c, seeds, nil
}

// produceAll publishes intents 1..n, keyed by intent id, with a client of
// opts (producerOpts), and waits for every confirm.
func produceAll(ctx context.Context, opts []kgo.Opt, n int) error {
	p, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer p.Close()
	errc := make(chan error, 1)
	for i := 1; i <= n; i++ {
		v, _ := json.Marshal(newIntent(i))
		p.Produce(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errc <- err:
				default:
				}
			}
		})
	}
	if err := p.Flush(ctx); err != nil {
		return err
	}
	select {
	case err := <-errc:
		return fmt.Errorf("produce: %w", err)
	default:
		return nil
	}
}

// txStore is the hand-written store: one dedicated connection, prepared
// statements, BEGIN IMMEDIATE and COMMIT issued directly.
type txStore struct {
	db                    *sql.DB
	conn                  *sql.Conn
	mark, credit, journal *sql.Stmt
}

// openTxStore creates a fresh store at path with the same pragmas as
// store.Open and the same tables as store.Open plus strategy.DedupTable.
func openTxStore(ctx context.Context, path string) (s *txStore, err error) {
	db, err := sql.Open("sqlite", DSN(path))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	s = &txStore{db: db}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.conn, err = db.Conn(ctx); err != nil {
		return nil, err
	}
	for _, q := range []string{
		`CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL)`,
		`CREATE TABLE ledger (seq INTEGER PRIMARY KEY AUTOINCREMENT, intent INTEGER NOT NULL, account INTEGER NOT NULL, amount INTEGER NOT NULL)`,
		`CREATE TABLE processed (message_id TEXT PRIMARY KEY, at BIGINT NOT NULL)`, // as strategy's dedup table
	} {
		if _, err := s.conn.ExecContext(ctx, q); err != nil {
			return nil, err
		}
	}
	for id := range accounts {
		if _, err := s.conn.ExecContext(ctx, `INSERT INTO accounts (id, balance) VALUES (?, 0)`, id); err != nil {
			return nil, err
		}
	}
	for _, p := range []struct {
		stmt **sql.Stmt
		q    string
	}{
		{&s.mark, `INSERT INTO processed (message_id, at) VALUES (?, ?) ON CONFLICT DO NOTHING`},
		{&s.credit, `UPDATE accounts SET balance = balance + ? WHERE id = ?`},
		{&s.journal, `INSERT INTO ledger (intent, account, amount) VALUES (?, ?, ?)`},
	} {
		if *p.stmt, err = s.conn.PrepareContext(ctx, p.q); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// apply is the per-message transaction: the dedup row, and if it is new,
// the balance update and the ledger row. It reports whether the effect
// applied. ctx should not be cancellable: a cancellable context makes the
// driver watch it on every statement.
func (s *txStore) apply(ctx context.Context, id string, m intent) (applied bool, err error) {
	if _, err := s.conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return false, err
	}
	defer func() {
		if err != nil {
			_, rerr := s.conn.ExecContext(ctx, "ROLLBACK")
			err = errors.Join(err, rerr)
		}
	}()
	res, err := s.mark.ExecContext(ctx, id, time.Now().UnixNano())
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, err
	}
	if applied = n == 1; applied {
		if _, err := s.credit.ExecContext(ctx, m.Amount, m.Account); err != nil {
			return false, err
		}
		if _, err := s.journal.ExecContext(ctx, m.Intent, m.Account, m.Amount); err != nil {
			return false, err
		}
	}
	if _, err := s.conn.ExecContext(ctx, "COMMIT"); err != nil {
		return false, err
	}
	return applied, nil
}

func (s *txStore) Close() error {
	var errs []error
	for _, st := range []*sql.Stmt{s.mark, s.credit, s.journal} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	if s.conn != nil {
		errs = append(errs, s.conn.Close())
	}
	return errors.Join(append(errs, s.db.Close())...)
}

// rawStore is the hand-written per-message transaction on one store.
type rawStore interface {
	apply(ctx context.Context, id string, m intent) (bool, error)
	Close() error
}

// openRawStore opens a fresh raw store on the store under measurement
// (-bench.store): a SQLite file named name in dir, or a new schema on
// PostgreSQL.
func openRawStore(ctx context.Context, dir, name string) (rawStore, error) {
	if *storeRef != "sqlite" {
		return openPgStore(ctx, *storeRef)
	}
	return openTxStore(ctx, filepath.Join(dir, name))
}

// runRaw is the hand-written pipeline: a fresh kfake cluster and a fresh
// store (a SQLite file in a new temporary directory, or a PostgreSQL
// schema), a producer publishing intents 1..n while a group consumer runs
// the per-message transaction and then commits that record synchronously.
// Everything it starts is stopped and removed before it returns, as
// runner.Run does, so timing a call times the same fixed costs.
func runRaw(n int) error {
	ctx := context.Background()
	c, seeds, err := startBroker(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return rawLoop(ctx, producerOpts(seeds), consumerOpts(seeds), n)
}

// rawLoop is the loop of runRaw on a topic that exists: a fresh store, a
// producer client of prod publishing intents 1..n while a group consumer
// of cons runs the per-message transaction and then commits that record
// synchronously. It returns once the consumer has left the group and the
// store is removed.
func rawLoop(ctx context.Context, prod, cons []kgo.Opt, n int) (err error) {
	dir, cleanup, err := tempDir()
	if err != nil {
		return err
	}
	defer cleanup()
	st, err := openRawStore(ctx, dir, "raw.db")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, st.Close()) }()
	cl, err := kgo.NewClient(cons...)
	if err != nil {
		return err
	}
	defer cl.Close() // leaves the group, as the pipeline's consumer does

	produced := make(chan error, 1)
	go func() { produced <- produceAll(ctx, prod, n) }()
	applied, err := consumeApply(ctx, cl, st, n)
	if err != nil {
		return err
	}
	if err := <-produced; err != nil {
		return err
	}
	if applied != n {
		return fmt.Errorf("raw loop applied %d effects, want %d", applied, n)
	}
	return nil
}

// consumeApply consumes n records, running the per-message transaction on
// each and then committing that record synchronously; it returns how many
// effects applied.
func consumeApply(ctx context.Context, cons *kgo.Client, st rawStore, n int) (applied int, err error) {
	for done := 0; done < n; {
		fs := cons.PollRecords(ctx, prefetch)
		if err := fs.Err0(); err != nil {
			return applied, fmt.Errorf("poll: %w", err)
		}
		for _, r := range fs.Records() {
			var m intent
			if err := json.Unmarshal(r.Value, &m); err != nil {
				return applied, fmt.Errorf("record %d: %w", r.Offset, err)
			}
			ok, err := st.apply(ctx, string(r.Key), m)
			if err != nil {
				return applied, fmt.Errorf("intent %d: %w", m.Intent, err)
			}
			if ok {
				applied++
			}
			if err := cons.CommitRecords(ctx, r); err != nil {
				return applied, fmt.Errorf("commit intent %d: %w", m.Intent, err)
			}
			done++
		}
	}
	return applied, nil
}

// timeTxLoop is reference (a): n per-message transactions on a fresh store,
// no broker. Only the transactions are timed.
func timeTxLoop(dir string, n int) (time.Duration, error) {
	ctx := context.Background()
	st, err := openRawStore(ctx, dir, "tx.db")
	if err != nil {
		return 0, err
	}
	defer st.Close()
	ids := make([]string, n+1)
	for i := range ids {
		ids[i] = strconv.Itoa(i)
	}
	start := time.Now()
	for i := 1; i <= n; i++ {
		if _, err := st.apply(ctx, ids[i], newIntent(i)); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}

// timeCommitLoop is reference (b): a group consumer committing each record
// synchronously, no store work, on a topic filled beforehand. It is timed
// from the first polled records to the last commit.
func timeCommitLoop(n int) (time.Duration, error) {
	ctx := context.Background()
	c, seeds, err := startBroker(ctx)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if err := produceAll(ctx, producerOpts(seeds), n); err != nil {
		return 0, err
	}
	cons, err := kgo.NewClient(consumerOpts(seeds)...)
	if err != nil {
		return 0, err
	}
	defer cons.Close()
	var start time.Time
	for done := 0; done < n; {
		fs := cons.PollRecords(ctx, prefetch)
		if err := fs.Err0(); err != nil {
			return 0, fmt.Errorf("poll: %w", err)
		}
		if start.IsZero() {
			start = time.Now()
		}
		for _, r := range fs.Records() {
			if err := cons.CommitRecords(ctx, r); err != nil {
				return 0, fmt.Errorf("commit: %w", err)
			}
			done++
		}
	}
	return time.Since(start), nil
}

// tempDir is a fresh directory for one measurement's SQLite file.
func tempDir() (string, func(), error) {
	dir, err := os.MkdirTemp("", "dqbench-bench-")
	if err != nil {
		return "", nil, err
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}
