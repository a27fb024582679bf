package strategy

import (
	"context"
	"database/sql"

	"github.com/dqbench/dqbench/faults"
	"github.com/dqbench/dqbench/store"
)

// DedupTable inserts the message id into a dedup table and applies the effect
// in one transaction; a conflict means the message was already processed.
type DedupTable struct{}

var _ Strategy = DedupTable{}

func (DedupTable) Name() string { return "dedup-table" }
func (DedupTable) Doc() string {
	return "dedup row and business update in one transaction; a conflict means already done"
}

func (DedupTable) Setup(ctx context.Context, db *sql.DB) error {
	_, err := db.ExecContext(ctx, createDedup)
	return err
}

func (DedupTable) Process(ctx context.Context, db *sql.DB, m Message, _ CrashHook) (Outcome, error) {
	var out Outcome
	err := inTx(ctx, db, func(tx *sql.Tx) error {
		fresh, err := markProcessed(ctx, tx, m.ID)
		if err != nil || !fresh {
			out.Reason = "duplicate: message id already in the dedup table"
			return err
		}
		out.Applied = true
		return store.Apply(ctx, tx, m.Effect)
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

var (
	_ Strategy     = DedupTableSplit{}
	_ CrashPointer = DedupTableSplit{}
)

func (DedupTableSplit) Name() string { return "dedup-table-split" }
func (DedupTableSplit) Doc() string {
	return "dedup row committed in its own transaction before the business update (fake idempotency)"
}

func (DedupTableSplit) CrashPoints() []faults.Point {
	return []faults.Point{faults.BetweenDedupAndEffect}
}

func (DedupTableSplit) Setup(ctx context.Context, db *sql.DB) error {
	_, err := db.ExecContext(ctx, createDedup)
	return err
}

func (DedupTableSplit) Process(ctx context.Context, db *sql.DB, m Message, crash CrashHook) (Outcome, error) {
	var fresh bool
	err := inTx(ctx, db, func(tx *sql.Tx) (err error) {
		fresh, err = markProcessed(ctx, tx, m.ID)
		return err
	})
	if err != nil {
		return Outcome{}, err
	}
	if !fresh {
		return Outcome{Reason: "duplicate: message id already in the dedup table"}, nil
	}
	if err := crash(faults.BetweenDedupAndEffect); err != nil {
		return Outcome{}, err
	}
	if err := inTx(ctx, db, func(tx *sql.Tx) error { return store.Apply(ctx, tx, m.Effect) }); err != nil {
		return Outcome{}, err
	}
	return Outcome{Applied: true}, nil
}
