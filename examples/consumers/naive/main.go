// Command naive is a consumer that is not idempotent: for each message it
// applies the effect (a payment row), then commits the offset. A crash
// between the two makes Kafka deliver the message again, and the payment
// is made twice. dqbench's examples/consumers/scenario.yaml shows it. One
// file, no dqbench imports: copy it.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	"github.com/twmb/franz-go/pkg/kgo"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "naive:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	db, err := openStore(ctx,
		`CREATE TABLE IF NOT EXISTS payments (message_id TEXT NOT NULL, account INTEGER NOT NULL, amount BIGINT NOT NULL)`)
	if err != nil {
		return err
	}
	defer db.Close()
	cl, err := kafka()
	if err != nil {
		return err
	}
	defer cl.Close() // leaves the group
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err := fs.Err0(); err != nil {
			return err
		}
		for _, r := range fs.Records() {
			b, err := decode(r)
			if err != nil {
				return fmt.Errorf("message %s: %w", r.Key, err)
			}
			// The effect...
			if _, err := db.ExecContext(ctx, `INSERT INTO payments (message_id, account, amount) VALUES ($1, $2, $3)`,
				string(r.Key), b.Account, b.Amount); err != nil {
				return err
			}
			// ...then the commit: a crash in between repeats the effect.
			if err := cl.CommitRecords(ctx, r); err != nil {
				return fmt.Errorf("commit %s: %w", r.Key, err)
			}
		}
	}
}

// body is a message's value: one business intent. The record key is the
// message id (the intent id, in decimal).
type body struct {
	Intent  int   `json:"intent"`
	Account int   `json:"account"`
	Amount  int64 `json:"amount"`
}

// decode reads a record's body.
func decode(r *kgo.Record) (body, error) {
	var b body
	err := json.Unmarshal(r.Value, &b)
	return b, err
}

func need(name string) string {
	v := os.Getenv(name)
	if v == "" {
		fmt.Fprintf(os.Stderr, "%s is not set: run me with dqbench (see its examples/consumers/README.md)\n", name)
		os.Exit(2)
	}
	return v
}

// kafka opens a consumer in dqbench's group on dqbench's topic, committing
// by hand.
func kafka() (*kgo.Client, error) {
	return kgo.NewClient(
		kgo.SeedBrokers(strings.Split(need("DQBENCH_BROKERS"), ",")...),
		kgo.ConsumerGroup(need("DQBENCH_GROUP")),
		kgo.ConsumeTopics(need("DQBENCH_TOPIC")),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(100*time.Millisecond),
	)
}

// openStore opens the store dqbench made for this run (DQBENCH_STORE:
// sqlite or postgres; DQBENCH_STORE_DSN: the file, or a URL whose
// search_path is the run's own schema) and runs ddl in it. Placeholders
// are written $1, $2, which both drivers read.
func openStore(ctx context.Context, ddl ...string) (*sql.DB, error) {
	driver, dsn := "sqlite", need("DQBENCH_STORE_DSN")
	if need("DQBENCH_STORE") == "postgres" {
		driver = "pgx"
	} else {
		// Several instances share the file: wait for each other's locks.
		dsn = "file:" + dsn + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	for _, q := range ddl {
		// Instances start together: on PostgreSQL two CREATE TABLE IF NOT
		// EXISTS at once can still collide, so try again.
		for try := 1; ; try++ {
			_, err = db.ExecContext(ctx, q)
			if err == nil {
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
