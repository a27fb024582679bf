package strategy

import (
	"context"
	"database/sql"

	"github.com/dqbench/dqbench/store"
)

// None applies the effect on every delivery: each redelivery duplicates it.
type None struct{}

var _ Strategy = None{}

func (None) Name() string { return "none" }
func (None) Doc() string  { return "apply the effect on every delivery (no idempotency)" }

func (None) Setup(context.Context, *sql.DB) error { return nil }

func (None) Process(ctx context.Context, db *sql.DB, m Message, _ CrashHook) (Outcome, error) {
	err := inTx(ctx, db, func(tx *sql.Tx) error { return store.Apply(ctx, tx, m.Effect) })
	return Outcome{Applied: err == nil}, err
}
