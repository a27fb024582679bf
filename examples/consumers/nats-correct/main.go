// Command nats-correct is an idempotent NATS JetStream consumer: for each
// message it inserts the message id into a dedup table and applies the
// effect in one transaction, then acks; a message id already there means
// the effect is done, and the message is only acked. A crash anywhere, or
// a lost ack, leaves either both rows or neither, so a redelivery never
// pays twice and nothing is lost. examples/consumers/nats.yaml runs it
// under dqbench. One file, no dqbench imports: copy it.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	_ "modernc.org/sqlite" // the "sqlite" driver
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "nats-correct:", err)
		os.Exit(1) // dqbench (or your supervisor) starts a fresh one
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	db, err := openStore(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	nc, err := nats.Connect(os.Getenv("DQBENCH_URL"),
		nats.NoReconnect(),             // a broken connection ends the process; dqbench starts a fresh one
		nats.IgnoreDiscoveredServers()) // stay on the address given (dqbench's relay)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	// The durable pull consumer dqbench made on the variant's stream.
	cons, err := js.Consumer(ctx, os.Getenv("DQBENCH_TOPIC"), os.Getenv("DQBENCH_GROUP"))
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		// One message at a time: the server sends the next only when this
		// process asks again, after the last one's ack. (With a larger
		// batch, a kill also repeats whatever the process had applied and
		// not yet acked, which depends on timing: the duplicates then vary
		// run to run.)
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			return err
		}
		for m := range batch.Messages() {
			// The message id is the subject's last token: the same on
			// every redelivery.
			id := m.Subject()[strings.LastIndexByte(m.Subject(), '.')+1:]
			var b struct {
				Account int   `json:"account"`
				Amount  int64 `json:"amount"`
			}
			if err := json.Unmarshal(m.Data(), &b); err != nil {
				return fmt.Errorf("message %s: %w", id, err)
			}
			if err := apply(ctx, db, id, b.Account, b.Amount); err != nil {
				return err
			}
			if err := m.Ack(); err != nil {
				return err
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
	}
	return nil
}

// apply records the message id and makes the payment in one transaction,
// unless the id is already recorded.
func apply(ctx context.Context, db *sql.DB, id string, account int, amount int64) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `INSERT INTO processed (message_id) VALUES ($1) ON CONFLICT DO NOTHING`, id)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err // already done: skip the effect
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO payments (message_id, account, amount) VALUES ($1, $2, $3)`, id, account, amount); err != nil {
		return err
	}
	return tx.Commit()
}

// openStore opens the store dqbench made for this run (DQBENCH_STORE:
// sqlite or postgres; DQBENCH_STORE_DSN: the file, or a URL) and creates
// the tables.
func openStore(ctx context.Context) (*sql.DB, error) {
	driver, dsn := "sqlite", os.Getenv("DQBENCH_STORE_DSN")
	if os.Getenv("DQBENCH_STORE") == "postgres" {
		driver = "pgx"
	} else {
		dsn = "file:" + dsn + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		`CREATE TABLE IF NOT EXISTS processed (message_id TEXT PRIMARY KEY)`,
		`CREATE TABLE IF NOT EXISTS payments (message_id TEXT NOT NULL, account INTEGER NOT NULL, amount BIGINT NOT NULL)`,
	} {
		// Instances start together: two first statements at once can
		// collide (SQLite: switching to WAL; PostgreSQL: CREATE TABLE IF
		// NOT EXISTS), so try again.
		for try := 1; ; try++ {
			if _, err = db.ExecContext(ctx, q); err == nil {
				break
			}
			if try == 5 {
				db.Close()
				return nil, fmt.Errorf("%s: %w", q, err)
			}
			time.Sleep(time.Duration(try) * 50 * time.Millisecond)
		}
	}
	return db, nil
}
