// Package strategy implements the consumer idempotency strategies dqbench
// compares. Each processes one delivered message against the business store
// and says whether the effect applied. Names, docs and crash points are in
// package catalog; All wires each name to its implementation.
package strategy

import (
	"context"

	"github.com/dqbench/dqbench/catalog"
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
type CrashHook func(catalog.CrashPoint) error

// Outcome is what processing did.
type Outcome struct {
	Applied bool   // the business effect was applied by this delivery
	Reason  string // why it was skipped, when it was
}

// Env is what a strategy works with: the variant's business store (and,
// as strategies need them, other clients such as Redis).
type Env struct {
	Store store.Store
}

// Strategy processes one delivery.
type Strategy interface {
	// Setup creates the tables the strategy needs beside the business tables.
	Setup(ctx context.Context, env Env) error
	// Process handles one delivery of m.
	Process(ctx context.Context, env Env, m Message, crash CrashHook) (Outcome, error)
}

// All maps every strategy name in catalog.Strategies to its implementation.
var All = map[string]Strategy{
	"none":              None{},
	"dedup-table":       DedupTable{},
	"dedup-table-split": DedupTableSplit{},
}

const createDedup = `CREATE TABLE IF NOT EXISTS processed (message_id TEXT PRIMARY KEY)`

// markProcessed inserts id into the dedup table; it reports false if the id
// was there already.
func markProcessed(tx store.Tx, id string) (bool, error) {
	n, err := tx.Exec(`INSERT INTO processed (message_id) VALUES (?) ON CONFLICT DO NOTHING`, id)
	return n == 1, err
}

const skippedDuplicate = "duplicate: message id already in the dedup table"
