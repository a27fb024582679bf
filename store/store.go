// Package store is the business database the consumer strategies write to,
// and the final audit that counts, per intent, how often its effect applied.
//
// The business effect is "balance = balance + amount" on an account row plus
// one ledger row per application, so the audit can count applications per
// intent and cross-check the balances. A Store hides the database: the
// strategies write portable SQL with ? placeholders (a store rebinds them
// for its driver), and the audit reads the ledger the same way on every
// store. What differs between databases is in one dialect (dialect.go).
package store

import (
	"context"
	"errors"

	"github.com/dqbench/dqbench/history"
)

// ErrUnreachable wraps every failure to reach a store's server (PostgreSQL,
// Redis), so the CLI can tell "the run could not be completed" (exit 3);
// such an error is an ErrUnusable too (check.go).
var ErrUnreachable = errors.New("store unreachable")

// ErrStalled wraps a store call that the run's end (its deadline, Ctrl-C)
// cut short: the store's server stopped answering, not the broker.
var ErrStalled = errors.New("the store stopped answering")

// ErrCleanup wraps a failure to remove what a run made on a store server
// (a schema, keys): the counts stand, but something was left behind.
var ErrCleanup = errors.New("cleanup on the store failed")

// Accounts is how many account rows intents spread their amounts over
// (history.Account says which one each intent's effect updates).
const Accounts = history.Accounts

// Effect is one business effect: add Amount to Account, on behalf of
// Intent (or, with another effect kind, what that kind does with them).
type Effect struct {
	Intent  int
	Account int
	Amount  int64
	// Key is the message id, sent as the Idempotency-Key of a
	// call-with-key effect.
	Key string
}

// Store is one variant's business database.
type Store interface {
	// Setup runs statements that create a strategy's own tables.
	Setup(ctx context.Context, ddl ...string) error
	// Tx runs fn in one write transaction, committing if fn returns nil
	// and rolling back otherwise. ctx is checked before the transaction
	// starts, not inside it: a transaction that starts, finishes.
	Tx(ctx context.Context, fn func(Tx) error) error
	// Audit reads the final state: ledger rows per intent and the accounts
	// whose balance disagrees with their ledger.
	Audit(ctx context.Context) (history.Audit, error)
	Close() error
}

// Tx is one open transaction.
type Tx interface {
	// Exec runs a statement (? placeholders) and returns the rows it changed.
	Exec(query string, args ...any) (int64, error)
	// QueryInt runs a query (? placeholders) that returns at most one row
	// of one integer; found is false when it returns no row.
	QueryInt(query string, args ...any) (n int64, found bool, err error)
	// Apply performs the business effect: the balance update and its ledger
	// row, not idempotent (every call adds the amount again); or, in a
	// store opened with another effect kind, that kind's (effects.go).
	Apply(e Effect) error
}

// CloseBy closes s, bounding what it removes from its server by ctx (the
// run's hard deadline, Ctrl-C) when it has a server.
func CloseBy(ctx context.Context, s interface{ Close() error }) error {
	if b, ok := s.(interface{ CloseBy(context.Context) error }); ok {
		return b.CloseBy(ctx)
	}
	return s.Close()
}
