package strategy

import (
	"context"

	"github.com/dqbench/dqbench/store"
)

// None applies the effect on every delivery: each redelivery duplicates it.
type None struct{}

var _ Processor = None{}

func (None) Setup(context.Context, Env) error { return nil }

func (None) Process(ctx context.Context, env Env, m Message, _ CrashHook) (Outcome, error) {
	err := env.Store.Tx(ctx, func(tx store.Tx) error { return tx.Apply(m.Effect) })
	return Outcome{Applied: err == nil}, err
}
