// Package contract reads what dqbench gives a consumer process (the
// DQBENCH_ environment variables) and opens its Kafka client and store;
// the two example consumers share it. See ../../README.md.
package contract

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	"github.com/twmb/franz-go/pkg/kgo"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Body is a message's value: one business intent. The record key is the
// message id (the intent id, in decimal).
type Body struct {
	Intent  int   `json:"intent"`
	Account int   `json:"account"`
	Amount  int64 `json:"amount"`
}

// Decode reads a record's body.
func Decode(r *kgo.Record) (Body, error) {
	var b Body
	err := json.Unmarshal(r.Value, &b)
	return b, err
}

func need(name string) string {
	v := os.Getenv(name)
	if v == "" {
		fmt.Fprintf(os.Stderr, "%s is not set: run me with dqbench (see examples/consumers/README.md)\n", name)
		os.Exit(2)
	}
	return v
}

// Kafka opens a consumer in dqbench's group on dqbench's topic, committing
// by hand.
func Kafka() (*kgo.Client, error) {
	return kgo.NewClient(
		kgo.SeedBrokers(strings.Split(need("DQBENCH_BROKERS"), ",")...),
		kgo.ConsumerGroup(need("DQBENCH_GROUP")),
		kgo.ConsumeTopics(need("DQBENCH_TOPIC")),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(100*time.Millisecond),
	)
}

// Store opens the store dqbench made for this run (DQBENCH_STORE:
// sqlite or postgres; DQBENCH_STORE_DSN: the file, or a URL whose
// search_path is the run's own schema) and runs ddl in it. Placeholders
// are written $1, $2, which both drivers read.
func Store(ctx context.Context, ddl ...string) (*sql.DB, error) {
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
