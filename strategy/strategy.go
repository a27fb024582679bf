// Package strategy implements the consumer idempotency strategies dqbench
// compares. Each processes one delivered message against the business store
// and says whether the effect applied. Names, docs and crash points are in
// package catalog; All wires each name to its implementation.
package strategy

import (
	"context"
	"fmt"
	"time"

	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/store"
)

// Message is what a strategy sees of one delivery.
type Message struct {
	// ID is the message id the strategy deduplicates on, from the
	// variant's id source (the business intent id by default).
	ID     string
	Effect store.Effect
	// Version is the version of the business object (the account) the
	// producer expected this update to apply to (version-cas).
	Version int64
}

// CrashHook is called at each crash point a strategy has. A non-nil error
// means the consumer dies there: the strategy must return that error at once,
// leaving whatever it committed so far committed.
type CrashHook func(catalog.CrashPoint) error

// Outcome is what processing did.
type Outcome struct {
	Applied bool   // the business effect was applied by this delivery
	Reason  string // why it was skipped, when it was
	// Rejected: the strategy refused the message as a permanent error (an
	// out-of-order version, an illegal state transition), not as a
	// duplicate.
	Rejected bool
}

// Env is what a strategy works with: the variant's business store, its own
// settings and, as strategies need them, other clients such as Redis.
type Env struct {
	Store store.Store
	// Redis is set for a strategy whose catalog entry NeedsRedis.
	Redis *store.Redis
	// Params is the strategy's own settings (catalog.Strategy.NewParams),
	// with defaults applied; nil when it takes none.
	Params any
	// Effect is the variant's effect kind, which the store's Tx.Apply
	// performs (store.Where.Effect); a strategy that cares (unique-key)
	// reads it here.
	Effect catalog.EffectKind
	// Intents is how many intents the run publishes (1..Intents), for a
	// strategy whose business objects exist before their messages.
	Intents int
	// Now is the clock (time.Now unless a test sets it).
	Now func() time.Time
}

func (e Env) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// Strategy is a strategy as All holds it. A strategy value is shared by
// every variant that names it, so it keeps no state of its own: state
// lives in the store, in Redis, or in a Stateful strategy's per-variant
// instance. Besides Setup, a strategy is a Processor (it processes every
// variant's deliveries itself) or Stateful (New returns each variant's
// Instance, which processes them); Open tells which.
type Strategy interface {
	// Setup creates the tables the strategy needs beside the business tables.
	Setup(ctx context.Context, env Env) error
}

// Processor is a strategy that processes one delivery itself, with no
// state but what it keeps in the store or in Redis: it is its own
// Instance in every variant.
type Processor interface {
	Strategy
	// Process handles one delivery of m.
	Process(ctx context.Context, env Env, m Message, crash CrashHook) (Outcome, error)
}

// Instance is a strategy as one variant runs it: every consumer instance
// of the variant calls its Process, as the threads of one consumer
// process would.
type Instance interface {
	// Process handles one delivery of m.
	Process(ctx context.Context, env Env, m Message, crash CrashHook) (Outcome, error)
	// Close releases what the instance holds; the runner calls it once,
	// when the variant's consumers have stopped.
	Close() error
}

// Stateful is a strategy that keeps state of its own per variant (ids
// seen in memory, entries that expire): New, called after Setup, returns
// the variant's instance, which holds that state and processes. It needs
// no Process of its own.
type Stateful interface {
	Strategy
	New(env Env) (Instance, error)
}

// RestartObserver is an Instance told when a consumer instance ends
// without a clean stop (a fault crashed it, it lost its lease, its
// connection broke) and a replacement takes its place: what the dead
// consumer held in memory is gone, and an in-memory strategy forgets it
// as a restarted process would.
type RestartObserver interface {
	// ConsumerRestarted is called with the generation of the consumer
	// instance that ended (brokers.Destination.Consumer's gen), before
	// its replacement handles a delivery.
	ConsumerRestarted(gen int)
}

// All maps every strategy name in catalog.Strategies to its implementation.
var All = map[catalog.StrategyName]Strategy{
	catalog.NoStrategy:        None{},
	catalog.DedupTable:        DedupTable{},
	catalog.DedupTableSplit:   DedupTableSplit{},
	catalog.UniqueKey:         UniqueKey{},
	catalog.StateMachine:      StateMachine{},
	catalog.VersionCAS:        VersionCAS{},
	catalog.ValueCAS:          ValueCAS{},
	catalog.ConditionalUpdate: ConditionalUpdate{},
	catalog.CheckThenAct:      CheckThenAct{},
	catalog.RedisSetNX:        RedisSetNX{},
}

// Open sets up strategy name for one variant (Setup) and returns the
// variant's instance: a Stateful strategy's New, else the Processor
// itself.
func Open(ctx context.Context, name catalog.StrategyName, env Env) (Instance, error) {
	st, ok := All[name]
	if !ok {
		return nil, fmt.Errorf("strategy %q is not supported by this build", name)
	}
	if err := st.Setup(ctx, env); err != nil {
		return nil, fmt.Errorf("set up strategy %s: %w", name, err)
	}
	switch st := st.(type) {
	case Stateful:
		inst, err := st.New(env)
		if err != nil {
			return nil, fmt.Errorf("start strategy %s: %w", name, err)
		}
		return inst, nil
	case Processor:
		return stateless{st}, nil
	}
	return nil, fmt.Errorf("strategy %s (%T) has neither Process nor New: implement strategy.Processor or strategy.Stateful", name, st)
}

// stateless is a strategy without state of its own as its variant's
// instance.
type stateless struct{ Processor }

func (stateless) Close() error { return nil }

const createDedup = `CREATE TABLE IF NOT EXISTS processed (message_id TEXT PRIMARY KEY, at BIGINT NOT NULL)`

// markProcessed inserts id into the dedup table, stamped with the time; it
// reports false if the id was there already.
func markProcessed(tx store.Tx, id string, at time.Time) (bool, error) {
	n, err := tx.Exec(`INSERT INTO processed (message_id, at) VALUES (?, ?) ON CONFLICT DO NOTHING`, id, at.UnixNano())
	return n == 1, err
}

const skippedDuplicate = "duplicate: message id already in the dedup table"

// inTx runs fn in one transaction of env's store and returns the outcome fn
// filled in, or the zero Outcome when the transaction failed.
func inTx(ctx context.Context, env Env, fn func(tx store.Tx, out *Outcome) error) (Outcome, error) {
	var out Outcome
	if err := env.Store.Tx(ctx, func(tx store.Tx) error { return fn(tx, &out) }); err != nil {
		return Outcome{}, err
	}
	return out, nil
}
