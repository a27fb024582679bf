// Command naive is a consumer that is not idempotent: for each message it
// applies the effect (a payment row), then commits the offset. A crash
// between the two makes Kafka deliver the message again, and the payment
// is made twice. dqbench's examples/consumers/scenario.yaml shows it.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/dqbench/dqbench/examples/consumers/internal/contract"
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
	db, err := contract.Store(ctx,
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
