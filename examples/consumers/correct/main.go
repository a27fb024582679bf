// Command correct is an idempotent consumer: for each message it inserts
// the message id into a dedup table and applies the effect in one
// transaction; a message id already there means the effect is done, and
// the message is only committed. A crash anywhere leaves either both rows
// or neither, so a redelivery never pays twice and nothing is lost.
package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/dqbench/dqbench/examples/consumers/internal/contract"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "correct:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	db, err := contract.Store(ctx,
		`CREATE TABLE IF NOT EXISTS processed (message_id TEXT PRIMARY KEY)`,
		`CREATE TABLE IF NOT EXISTS payments (message_id TEXT NOT NULL, account INTEGER NOT NULL, amount BIGINT NOT NULL)`)
	if err != nil {
		return err
	}
	defer db.Close()
	cl, err := contract.Kafka()
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
			b, err := contract.Decode(r)
			if err != nil {
				return fmt.Errorf("message %s: %w", r.Key, err)
			}
			if err := apply(ctx, db, string(r.Key), b); err != nil {
				return err
			}
			if err := cl.CommitRecords(ctx, r); err != nil {
				return fmt.Errorf("commit %s: %w", r.Key, err)
			}
		}
	}
}

// apply records the message id and makes the payment in one transaction,
// unless the id is already recorded.
func apply(ctx context.Context, db *sql.DB, id string, b contract.Body) error {
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
	if _, err := tx.ExecContext(ctx, `INSERT INTO payments (message_id, account, amount) VALUES ($1, $2, $3)`, id, b.Account, b.Amount); err != nil {
		return err
	}
	return tx.Commit()
}
