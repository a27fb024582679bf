package strategy

import (
	"context"

	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/store"
)

// DedupTable inserts the message id into a dedup table and applies the effect
// in one transaction; a conflict means the message was already processed.
type DedupTable struct{}

var _ Strategy = DedupTable{}

func (DedupTable) Setup(ctx context.Context, env Env) error {
	return env.Store.Setup(ctx, createDedup)
}

func (DedupTable) Process(ctx context.Context, env Env, m Message, _ CrashHook) (Outcome, error) {
	var out Outcome
	err := env.Store.Tx(ctx, func(tx store.Tx) error {
		fresh, err := markProcessed(tx, m.ID)
		if err != nil || !fresh {
			out.Reason = skippedDuplicate
			return err
		}
		out.Applied = true
		return tx.Apply(m.Effect)
	})
	if err != nil {
		return Outcome{}, err
	}
	return out, nil
}

// DedupTableSplit commits the dedup row in its own transaction before the
// business update: the "fake idempotency" anti-pattern. A crash between the
// two leaves the marker without the effect, and the redelivery is skipped:
// the effect is lost.
type DedupTableSplit struct{}

var _ Strategy = DedupTableSplit{}

func (DedupTableSplit) Setup(ctx context.Context, env Env) error {
	return env.Store.Setup(ctx, createDedup)
}

func (DedupTableSplit) Process(ctx context.Context, env Env, m Message, crash CrashHook) (Outcome, error) {
	var fresh bool
	err := env.Store.Tx(ctx, func(tx store.Tx) (err error) {
		fresh, err = markProcessed(tx, m.ID)
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
