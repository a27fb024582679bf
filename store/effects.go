package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/history"
)

// effectStore is a store whose Apply performs an effect kind other than
// increment (catalog.Effects), and whose audit counts that kind's effects
// from what it leaves behind: what applying an effect twice leaves is
// what decides whether a redelivery duplicated it.
type effectStore struct {
	Store
	kind    catalog.EffectKind
	intents int
	svc     *Service // call and call-with-key
}

// counter is what an effect's audit needs of the store under it.
type counter interface {
	countBy(ctx context.Context, query string) (map[int]int, error)
}

var (
	_ counter = (*SQLite)(nil)
	_ counter = (*Postgres)(nil)
)

// The table of the set, upsert and delete effects: one row per intent.
const createRecords = `CREATE TABLE IF NOT EXISTS records (id BIGINT PRIMARY KEY, value BIGINT NOT NULL)`

// The table of the append effect: a row per application, no key.
const createEntries = `CREATE TABLE IF NOT EXISTS entries (intent BIGINT NOT NULL, account INTEGER NOT NULL, amount BIGINT NOT NULL)`

// WithEffect returns st with Apply performing effect kind k for intents
// 1..intents: st itself for increment and create (create's order row is
// unique-key's own), else st with the kind's tables (and, for a call, the
// external service) set up. On an error st is closed.
func WithEffect(ctx context.Context, st Store, k catalog.EffectKind, intents int) (Store, error) {
	if k == "" || k == catalog.Increment || k == catalog.Create {
		return st, nil
	}
	if _, ok := catalog.LookupEffect(k); !ok {
		st.Close()
		return nil, fmt.Errorf("effect %q is not supported by this build", k)
	}
	if _, ok := st.(counter); !ok {
		st.Close()
		return nil, fmt.Errorf("effect %s: the store cannot be audited for it", k)
	}
	s := &effectStore{Store: st, kind: k, intents: intents}
	if err := s.setup(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("set up effect %s: %w", k, err), s.Close())
	}
	return s, nil
}

func (s *effectStore) setup(ctx context.Context) error {
	switch s.kind {
	case catalog.Set, catalog.Delete:
		if err := s.Store.Setup(ctx, createRecords); err != nil {
			return err
		}
		// Every intent's row exists before its message comes.
		const batch = 10_000
		for lo := 1; lo <= s.intents; lo += batch {
			err := s.Store.Tx(ctx, func(tx Tx) error {
				for id := lo; id < lo+batch && id <= s.intents; id++ {
					if _, err := tx.Exec(`INSERT INTO records (id, value) VALUES (?, 0) ON CONFLICT DO NOTHING`, id); err != nil {
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
	case catalog.Upsert:
		return s.Store.Setup(ctx, createRecords)
	case catalog.Append:
		return s.Store.Setup(ctx, createEntries)
	case catalog.Call, catalog.CallWithKey:
		svc, err := StartService()
		s.svc = svc
		return err
	}
	return fmt.Errorf("no setup for effect %s", s.kind)
}

// Tx runs fn with a transaction whose Apply is the kind's.
func (s *effectStore) Tx(ctx context.Context, fn func(Tx) error) error {
	return s.Store.Tx(ctx, func(tx Tx) error { return fn(effectTx{Tx: tx, s: s, ctx: ctx}) })
}

type effectTx struct {
	Tx
	s   *effectStore
	ctx context.Context
}

// Apply performs the kind's effect. A call is made from inside the
// transaction, as a consumer that calls a service while it holds its
// database transaction does: the call cannot roll back with it.
func (t effectTx) Apply(e Effect) error {
	var err error
	switch t.s.kind {
	case catalog.Set:
		_, err = t.Exec(`UPDATE records SET value = ? WHERE id = ?`, e.Amount, e.Intent)
	case catalog.Upsert:
		_, err = t.Exec(`INSERT INTO records (id, value) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET value = excluded.value`, e.Intent, e.Amount)
	case catalog.Delete:
		_, err = t.Exec(`DELETE FROM records WHERE id = ?`, e.Intent)
	case catalog.Append:
		_, err = t.Exec(`INSERT INTO entries (intent, account, amount) VALUES (?, ?, ?)`, e.Intent, e.Account, e.Amount)
	case catalog.Call:
		_, err = t.s.svc.Pay(t.ctx, e, "")
	case catalog.CallWithKey:
		_, err = t.s.svc.Pay(t.ctx, e, e.Key)
	default:
		err = fmt.Errorf("no effect %s", t.s.kind)
	}
	if err != nil {
		return fmt.Errorf("apply %s effect of intent %d: %w", t.s.kind, e.Intent, err)
	}
	return nil
}

// Audit counts the kind's effects per intent from the final state (or,
// for a call, from the service's record of its calls, which the audit
// carries), beside the balances' check of the store under it.
func (s *effectStore) Audit(ctx context.Context) (history.Audit, error) {
	a, err := s.Store.Audit(ctx)
	if err != nil {
		return a, err
	}
	c := s.Store.(counter)
	switch s.kind {
	case catalog.Set:
		a.Applied, err = c.countBy(ctx, `SELECT id, 1 FROM records WHERE value <> 0`)
	case catalog.Upsert:
		a.Applied, err = c.countBy(ctx, `SELECT id, 1 FROM records`)
	case catalog.Delete:
		var left map[int]int
		left, err = c.countBy(ctx, `SELECT id, 1 FROM records`)
		a.Applied = map[int]int{}
		for id := 1; id <= s.intents; id++ {
			if left[id] == 0 {
				a.Applied[id] = 1
			}
		}
	case catalog.Append:
		a.Applied, err = c.countBy(ctx, `SELECT intent, COUNT(*) FROM entries GROUP BY intent`)
	case catalog.Call, catalog.CallWithKey:
		// The service's own view; the checker recounts it from the keys
		// (history.CallEffects).
		a.Calls = s.svc.Calls()
		a.Applied = map[int]int{}
		for _, call := range a.Calls {
			if !call.Replayed {
				a.Applied[call.Intent]++
			}
		}
	}
	if err != nil {
		return history.Audit{}, fmt.Errorf("audit %s effects: %w", s.kind, err)
	}
	return a, nil
}

// Close stops the external service, if any, and closes the store.
func (s *effectStore) Close() error { return s.CloseBy(context.Background()) }

// CloseBy is Close bounded by ctx, for a store with a server.
func (s *effectStore) CloseBy(ctx context.Context) error {
	var err error
	if s.svc != nil {
		err = s.svc.Close()
	}
	return errors.Join(err, CloseBy(ctx, s.Store))
}
