package strategy

import (
	"context"
	"fmt"

	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/store"
)

// UniqueKey relies on the business table's own primary key. With a create
// effect the order row is keyed by the business id: a second insert
// conflicts, and the conflict means "already done". Any other effect (add
// to a balance, a ledger row, a call) has no row of its own keyed by the
// business id, so nothing conflicts and every delivery applies again: the
// strategy cannot protect it.
type UniqueKey struct{}

var _ Processor = UniqueKey{}

const createOrders = `CREATE TABLE IF NOT EXISTS orders (id BIGINT PRIMARY KEY, account INTEGER NOT NULL, amount BIGINT NOT NULL)`

func (UniqueKey) Setup(ctx context.Context, env Env) error {
	return env.Store.Setup(ctx, createOrders)
}

func effectKind(env Env) catalog.EffectKind {
	if env.Effect == "" {
		return catalog.DefaultEffect(catalog.UniqueKey)
	}
	return env.Effect
}

func (UniqueKey) Process(ctx context.Context, env Env, m Message, _ CrashHook) (Outcome, error) {
	kind := effectKind(env)
	return inTx(ctx, env, func(tx store.Tx, out *Outcome) error {
		if kind == catalog.Create {
			// The order row is the business effect's own row, keyed by the
			// business id; the ledger row records that it applied.
			n, err := tx.Exec(`INSERT INTO orders (id, account, amount) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`,
				m.Effect.Intent, m.Effect.Account, m.Effect.Amount)
			if err != nil || n == 0 {
				out.Reason = "duplicate: the order row with this business id exists"
				return err
			}
		}
		out.Applied = true
		return tx.Apply(m.Effect)
	})
}

// StateMachine moves the order of the intent from PENDING to PAID with a
// conditional update; 0 rows changed means it was not PENDING: already PAID
// (a duplicate), or in no state that may become PAID (an illegal
// transition: rejected, a permanent error that must not be requeued).
type StateMachine struct{}

var _ Processor = StateMachine{}

const createPayments = `CREATE TABLE IF NOT EXISTS payments (id BIGINT PRIMARY KEY, status TEXT NOT NULL)`

// Setup creates the PENDING order of every intent the run will publish:
// the orders exist before their payment messages arrive.
func (StateMachine) Setup(ctx context.Context, env Env) error {
	if err := env.Store.Setup(ctx, createPayments); err != nil {
		return err
	}
	const batch = 10_000
	for lo := 1; lo <= env.Intents; lo += batch {
		err := env.Store.Tx(ctx, func(tx store.Tx) error {
			for id := lo; id < lo+batch && id <= env.Intents; id++ {
				if _, err := tx.Exec(`INSERT INTO payments (id, status) VALUES (?, 'PENDING') ON CONFLICT DO NOTHING`, id); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (StateMachine) Process(ctx context.Context, env Env, m Message, _ CrashHook) (Outcome, error) {
	return inTx(ctx, env, func(tx store.Tx, out *Outcome) error {
		n, err := tx.Exec(`UPDATE payments SET status = 'PAID' WHERE id = ? AND status = 'PENDING'`, m.Effect.Intent)
		if err != nil {
			return err
		}
		if n == 1 {
			out.Applied = true
			return tx.Apply(m.Effect)
		}
		paid, found, err := tx.QueryInt(`SELECT COUNT(*) FROM payments WHERE id = ? AND status = 'PAID'`, m.Effect.Intent)
		switch {
		case err != nil:
			return err
		case found && paid == 1:
			out.Reason = "duplicate: the order is already PAID"
		default:
			out.Rejected = true
			out.Reason = fmt.Sprintf("rejected: order %d is not PENDING, so it cannot become PAID (illegal transition)", m.Effect.Intent)
		}
		return nil
	})
}

// VersionCAS updates the intent's account only at the version the message
// expects, and bumps it: one compare-and-set per update. A message whose
// version has been passed was applied already (a duplicate); one whose
// version has not been reached yet arrived out of order, and is rejected:
// neither a duplicate nor a silent loss, but an update the consumer refused.
type VersionCAS struct{}

var _ Processor = VersionCAS{}

const createVersions = `CREATE TABLE IF NOT EXISTS versions (account INTEGER PRIMARY KEY, version BIGINT NOT NULL)`

func (VersionCAS) Setup(ctx context.Context, env Env) error {
	if err := env.Store.Setup(ctx, createVersions); err != nil {
		return err
	}
	return env.Store.Tx(ctx, func(tx store.Tx) error {
		for id := range store.Accounts {
			if _, err := tx.Exec(`INSERT INTO versions (account, version) VALUES (?, 0) ON CONFLICT DO NOTHING`, id); err != nil {
				return err
			}
		}
		return nil
	})
}

// ExpectedVersion is the version of its account an intent's update
// expects: intents take turns over the accounts, so intent i is update
// number (i-1)/Accounts of account i%Accounts, counting from 0.
func ExpectedVersion(intent int) int64 { return int64((intent - 1) / store.Accounts) }

func (VersionCAS) Process(ctx context.Context, env Env, m Message, _ CrashHook) (Outcome, error) {
	return inTx(ctx, env, func(tx store.Tx, out *Outcome) error {
		n, err := tx.Exec(`UPDATE versions SET version = version + 1 WHERE account = ? AND version = ?`, m.Effect.Account, m.Version)
		if err != nil {
			return err
		}
		if n == 1 {
			out.Applied = true
			return tx.Apply(m.Effect)
		}
		current, _, err := tx.QueryInt(`SELECT version FROM versions WHERE account = ?`, m.Effect.Account)
		switch {
		case err != nil:
			return err
		case current > m.Version:
			out.Reason = fmt.Sprintf("duplicate: account %d is at version %d, past the expected %d", m.Effect.Account, current, m.Version)
		default:
			out.Rejected = true
			out.Reason = fmt.Sprintf("rejected: account %d is at version %d, the message expects %d (out of order)", m.Effect.Account, current, m.Version)
		}
		return nil
	})
}

// ValueCAS is version-cas with the value itself as the version: the
// message carries the balance its account had before the update (what the
// producer read), and the update applies only while the balance is still
// that: UPDATE wallets SET balance = new WHERE account = ? AND balance =
// old. Each account's balance goes back and forth between two values, a
// withdrawal of everything and its refund (A, B, A, ...), so update n of
// an account expects A when n is even and B when it is odd. A redelivery
// of update n after update n+1 finds B for A's update: taken for done.
// After n+2 the balance is A again, the value update n expects: the stale
// redelivery applies a second time (ABA). A failed check finds the other
// value, which is also what the update would have set, so it reads as
// "already done": value-cas never rejects, and an update that comes
// before the one it follows is skipped (lost) as if done.
type ValueCAS struct{}

var _ Processor = ValueCAS{}

// The two balances of ValueCAS's accounts: A before an even update.
const (
	balanceA = 100
	balanceB = 0
)

// balanceBefore is the balance update number n of an account expects.
func balanceBefore(n int64) int64 {
	if n%2 == 0 {
		return balanceA
	}
	return balanceB
}

func (ValueCAS) Setup(ctx context.Context, env Env) error {
	if err := env.Store.Setup(ctx, createWallets); err != nil {
		return err
	}
	return env.Store.Tx(ctx, func(tx store.Tx) error {
		for id := range store.Accounts {
			if _, err := tx.Exec(`INSERT INTO wallets (account, balance) VALUES (?, ?) ON CONFLICT DO NOTHING`, id, balanceBefore(0)); err != nil {
				return err
			}
		}
		return nil
	})
}

func (ValueCAS) Process(ctx context.Context, env Env, m Message, _ CrashHook) (Outcome, error) {
	old, next := balanceBefore(m.Version), balanceBefore(m.Version+1)
	return inTx(ctx, env, func(tx store.Tx, out *Outcome) error {
		n, err := tx.Exec(`UPDATE wallets SET balance = ? WHERE account = ? AND balance = ?`, next, m.Effect.Account, old)
		if err != nil || n == 0 {
			out.Reason = fmt.Sprintf("duplicate: account %d's balance is not %d but %d, what this update sets", m.Effect.Account, old, next)
			return err
		}
		out.Applied = true
		return tx.Apply(m.Effect)
	})
}

// ConditionalUpdate withdraws the intent's amount from its account's
// wallet only while the balance covers it: a business precondition, the
// check a payment service has anyway. It is not an idempotency guard: a
// redelivered withdrawal applies again as long as the balance still covers
// it, and after a deposit brings a balance back up (A to B and back to
// A), a stale redelivery that once failed the check passes it. 0 rows:
// insufficient funds, a business refusal (rejected), not a duplicate.
type ConditionalUpdate struct{}

var _ Processor = ConditionalUpdate{}

const createWallets = `CREATE TABLE IF NOT EXISTS wallets (account INTEGER PRIMARY KEY, balance BIGINT NOT NULL)`

// Setup opens every account's wallet with the opening balance.
func (ConditionalUpdate) Setup(ctx context.Context, env Env) error {
	if err := env.Store.Setup(ctx, createWallets); err != nil {
		return err
	}
	opening := int64(1_000_000)
	if p, ok := env.Params.(*catalog.ConditionalParams); ok && p.Balance > 0 {
		opening = int64(p.Balance)
	}
	return env.Store.Tx(ctx, func(tx store.Tx) error {
		for id := range store.Accounts {
			if _, err := tx.Exec(`INSERT INTO wallets (account, balance) VALUES (?, ?) ON CONFLICT DO NOTHING`, id, opening); err != nil {
				return err
			}
		}
		return nil
	})
}

func (ConditionalUpdate) Process(ctx context.Context, env Env, m Message, _ CrashHook) (Outcome, error) {
	return inTx(ctx, env, func(tx store.Tx, out *Outcome) error {
		n, err := tx.Exec(`UPDATE wallets SET balance = balance - ? WHERE account = ? AND balance >= ?`, m.Effect.Amount, m.Effect.Account, m.Effect.Amount)
		if err != nil {
			return err
		}
		if n == 0 {
			out.Rejected = true
			out.Reason = fmt.Sprintf("rejected: account %d's balance does not cover %d (insufficient funds)", m.Effect.Account, m.Effect.Amount)
			return nil
		}
		out.Applied = true
		return tx.Apply(m.Effect)
	})
}

// CheckThenAct asks "processed?" in one transaction and applies and marks in
// another, with no lock and no unique constraint: the pattern that looks
// idempotent in a single-threaded test. Two instances handling the same
// intent at once both see "not processed" and both apply.
type CheckThenAct struct{}

var _ Processor = CheckThenAct{}

// No primary key: the pattern has no constraint (an index only for speed).
const createChecked = `CREATE TABLE IF NOT EXISTS checked (message_id TEXT NOT NULL)`

func (CheckThenAct) Setup(ctx context.Context, env Env) error {
	return env.Store.Setup(ctx, createChecked, `CREATE INDEX IF NOT EXISTS checked_id ON checked (message_id)`)
}

func (CheckThenAct) Process(ctx context.Context, env Env, m Message, crash CrashHook) (Outcome, error) {
	var seen int64
	err := env.Store.Tx(ctx, func(tx store.Tx) (err error) {
		seen, _, err = tx.QueryInt(`SELECT COUNT(*) FROM checked WHERE message_id = ?`, m.ID)
		return err
	})
	if err != nil {
		return Outcome{}, err
	}
	if seen > 0 {
		return Outcome{Reason: "duplicate: the message id was marked processed"}, nil
	}
	if err := crash(catalog.BetweenCheckAndAct); err != nil {
		return Outcome{}, err
	}
	err = env.Store.Tx(ctx, func(tx store.Tx) error {
		if err := tx.Apply(m.Effect); err != nil {
			return err
		}
		_, err := tx.Exec(`INSERT INTO checked (message_id) VALUES (?)`, m.ID)
		return err
	})
	if err != nil {
		return Outcome{}, err
	}
	return Outcome{Applied: true}, nil
}

// RedisSetNX claims the message id in Redis (SET key NX PX ttl) before it
// processes: the claim and the business write are in two systems, so they
// cannot commit together. A crash between them leaves the claim without the
// effect (lost); a claim that expires before the redelivery lets it apply
// again (duplicate).
type RedisSetNX struct{}

var _ Processor = RedisSetNX{}

func (RedisSetNX) Setup(ctx context.Context, env Env) error {
	if env.Redis == nil {
		return fmt.Errorf("redis-setnx needs a Redis client")
	}
	return nil
}

func (RedisSetNX) Process(ctx context.Context, env Env, m Message, crash CrashHook) (Outcome, error) {
	ttl := catalog.Duration(60e9)
	if p, ok := env.Params.(*catalog.RedisSetNXParams); ok && p.TTL > 0 {
		ttl = p.TTL
	}
	ok, err := env.Redis.Client.SetNX(ctx, env.Redis.Key(m.ID), 1, ttl.D()).Result()
	if err != nil {
		return Outcome{}, fmt.Errorf("redis SET NX: %w", err)
	}
	if !ok {
		return Outcome{Reason: "duplicate: the Redis key of the message id exists"}, nil
	}
	if err := crash(catalog.BetweenSetnxAndEffect); err != nil {
		return Outcome{}, err
	}
	if err := env.Store.Tx(ctx, func(tx store.Tx) error { return tx.Apply(m.Effect) }); err != nil {
		return Outcome{}, err
	}
	return Outcome{Applied: true}, nil
}
