// Package strategy holds the consumer idempotency strategies dqbench
// compares. Each strategy processes one delivered message against the
// business store and says whether the effect applied.
package strategy

import (
	"context"
	"database/sql"
	"errors"

	"github.com/dqbench/dqbench/faults"
	"github.com/dqbench/dqbench/store"
)

// Message is what a strategy sees of one delivery.
type Message struct {
	ID     string // the message id the strategy deduplicates on (the business intent id)
	Effect store.Effect
}

// CrashHook is called at each crash point a strategy has. A non-nil error
// means the consumer dies there: the strategy must return that error at once,
// leaving whatever it committed so far committed.
type CrashHook func(faults.Point) error

// Outcome is what processing did.
type Outcome struct {
	Applied bool   // the business effect was applied by this delivery
	Reason  string // why it was skipped, when it was
}

// Strategy processes one delivery.
type Strategy interface {
	Name() string
	// Doc is one line for docs and --help.
	Doc() string
	// Setup creates the tables the strategy needs beside the business tables.
	Setup(ctx context.Context, db *sql.DB) error
	// Process handles one delivery of m.
	Process(ctx context.Context, db *sql.DB, m Message, crash CrashHook) (Outcome, error)
}

// CrashPointer is implemented by strategies that have crash points of their
// own, besides the consumer loop's.
type CrashPointer interface {
	CrashPoints() []faults.Point
}

// All is every strategy, in the order docs list them.
var All = []Strategy{None{}, DedupTable{}, DedupTableSplit{}}

// Lookup returns the strategy named name.
func Lookup(name string) (Strategy, bool) {
	for _, s := range All {
		if s.Name() == name {
			return s, true
		}
	}
	return nil, false
}

// Names lists the strategy names.
func Names() []string {
	out := make([]string, len(All))
	for i, s := range All {
		out[i] = s.Name()
	}
	return out
}

// HasPoint reports whether a consumer using s has crash point p.
func HasPoint(s Strategy, p faults.Point) bool {
	for _, lp := range faults.LoopPoints {
		if lp == p {
			return true
		}
	}
	if cp, ok := s.(CrashPointer); ok {
		for _, sp := range cp.CrashPoints() {
			if sp == p {
				return true
			}
		}
	}
	return false
}

// inTx runs fn in one transaction, committing if it returns nil.
func inTx(ctx context.Context, db *sql.DB, fn func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return errors.Join(err, tx.Rollback())
	}
	return tx.Commit()
}

const createDedup = `CREATE TABLE IF NOT EXISTS processed (message_id TEXT PRIMARY KEY)`

// markProcessed inserts id into the dedup table; it reports false if the id
// was there already.
func markProcessed(ctx context.Context, x store.Execer, id string) (bool, error) {
	res, err := x.ExecContext(ctx, `INSERT INTO processed (message_id) VALUES (?) ON CONFLICT DO NOTHING`, id)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
