package strategy

import (
	"context"
	"time"

	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/store"
)

// DedupTable inserts the message id into a dedup table and applies the effect
// in one transaction; a conflict means the message was already processed.
// With a retention, rows older than it are deleted first (in the same
// transaction): a redelivery that comes later than that is applied again.
type DedupTable struct{}

var _ Processor = DedupTable{}

// Setup creates the dedup table, and with a retention the index its
// purge reads (without one, the index would only cost every insert a
// second b-tree write).
func (DedupTable) Setup(ctx context.Context, env Env) error {
	if retentionOf(env) > 0 {
		return env.Store.Setup(ctx, createDedup, `CREATE INDEX IF NOT EXISTS processed_at ON processed (at)`)
	}
	return env.Store.Setup(ctx, createDedup)
}

func retentionOf(env Env) time.Duration {
	if p, ok := env.Params.(*catalog.DedupTableParams); ok {
		return p.Retention.D()
	}
	return 0
}

func (DedupTable) Process(ctx context.Context, env Env, m Message, _ CrashHook) (Outcome, error) {
	retention := retentionOf(env)
	now := env.now()
	return inTx(ctx, env, func(tx store.Tx, out *Outcome) error {
		if retention > 0 {
			if _, err := tx.Exec(`DELETE FROM processed WHERE at < ?`, now.Add(-retention).UnixNano()); err != nil {
				return err
			}
		}
		fresh, err := markProcessed(tx, m.ID, now)
		if err != nil || !fresh {
			out.Reason = skippedDuplicate
			return err
		}
		out.Applied = true
		return tx.Apply(m.Effect)
	})
}

// DedupTableSplit commits the dedup row in its own transaction before the
// business update: the "fake idempotency" anti-pattern. A crash between the
// two leaves the marker without the effect, and the redelivery is skipped:
// the effect is lost.
type DedupTableSplit struct{}

var _ Processor = DedupTableSplit{}

func (DedupTableSplit) Setup(ctx context.Context, env Env) error {
	return env.Store.Setup(ctx, createDedup)
}

func (DedupTableSplit) Process(ctx context.Context, env Env, m Message, crash CrashHook) (Outcome, error) {
	var fresh bool
	err := env.Store.Tx(ctx, func(tx store.Tx) (err error) {
		fresh, err = markProcessed(tx, m.ID, env.now())
		return err
	})
	if err != nil {
		return Outcome{}, err
	}
	if !fresh {
		return Outcome{Reason: skippedDuplicate}, nil
	}
	if err := crash(catalog.BetweenDedupAndEffect); err != nil {
		return Outcome{}, err
	}
	if err := env.Store.Tx(ctx, func(tx store.Tx) error { return tx.Apply(m.Effect) }); err != nil {
		return Outcome{}, err
	}
	return Outcome{Applied: true}, nil
}
