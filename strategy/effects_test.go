package strategy

import (
	"context"
	"testing"

	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/store"
)

// Each effect kind, delivered twice to none and to dedup-table: what the
// audit counts is what the second application left behind. The naturally
// idempotent kinds count once even without a strategy; the others twice.
func TestEffectKindsRedelivered(t *testing.T) {
	for _, e := range catalog.Effects {
		if e.Only != "" {
			continue // create: unique-key's, in TestRedelivery
		}
		for _, tc := range []struct {
			strategy catalog.StrategyName
			want     int
		}{
			{catalog.NoStrategy, map[bool]int{true: 1, false: 2}[e.Idempotent]},
			{catalog.DedupTable, 1},
		} {
			eachEnv(t, tc.strategy, func(t *testing.T, env Env) {
				ctx := context.Background()
				st, err := store.WithEffect(ctx, env.Store, e.Kind, testIntents)
				if err != nil {
					t.Fatal(err)
				}
				env.Store, env.Effect = st, e.Kind
				s := processor(t, tc.strategy)
				setup(t, env, s)
				m := msg(7)
				m.Effect.Key = m.ID
				for i := range 2 {
					if _, err := s.Process(ctx, env, m, noCrash); err != nil {
						t.Fatalf("%s, delivery %d: %v", e.Kind, i+1, err)
					}
				}
				a, err := env.Store.Audit(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if a.Applied[7] != tc.want || len(a.Applied) != 1 {
					t.Errorf("%s: audit %v, want intent 7 counted %d times and nothing else", e.Kind, a.Applied, tc.want)
				}
				if e.Kind.IsCall() {
					wantCalls := map[catalog.StrategyName]int{catalog.NoStrategy: 2, catalog.DedupTable: 1}[tc.strategy]
					if len(a.Calls) != wantCalls {
						t.Errorf("%s: the service recorded %d calls, want %d: %+v", e.Kind, len(a.Calls), wantCalls, a.Calls)
					}
				}
			})
		}
	}
}

// A withdrawal's precondition (the balance covers it) is not an
// idempotency guard: redelivered, the withdrawal applies again while the
// balance covers it. Once the balance is too low the redelivery is refused,
// which looks like protection, until a deposit brings the balance back
// (A, then B, then A again) and the stale redelivery passes the same check.
func TestConditionalUpdateABA(t *testing.T) {
	eachEnv(t, catalog.ConditionalUpdate, func(t *testing.T, env Env) {
		ctx := context.Background()
		env.Params = &catalog.ConditionalParams{Balance: 10} // msg's amount: one withdrawal
		s := ConditionalUpdate{}
		setup(t, env, s)
		m := msg(3)
		if out, err := s.Process(ctx, env, m, noCrash); err != nil || !out.Applied {
			t.Fatalf("withdrawal: %+v, %v; want applied", out, err)
		}
		out, err := s.Process(ctx, env, m, noCrash)
		if err != nil || out.Applied || !out.Rejected {
			t.Fatalf("redelivery at balance 0: %+v, %v; want refused for insufficient funds", out, err)
		}
		// A deposit: the balance is back where it was (A → B → A).
		err = env.Store.Tx(ctx, func(tx store.Tx) error {
			_, err := tx.Exec(`UPDATE wallets SET balance = balance + 10 WHERE account = ?`, m.Effect.Account)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if out, err := s.Process(ctx, env, m, noCrash); err != nil || !out.Applied {
			t.Fatalf("stale redelivery after the deposit: %+v, %v; want applied again (ABA)", out, err)
		}
		if n := applied(t, env, 3); n != 2 {
			t.Errorf("withdrawal applied %d times, want 2", n)
		}
	})
}

// A stale redelivery after two later updates of its account: version-cas
// sees a version past the one it expects and skips it; value-cas finds
// the balance back at the value it expects (A, B, A) and applies it again.
func TestValueCASABA(t *testing.T) {
	for _, tc := range []struct {
		strategy catalog.StrategyName
		want     int
	}{
		{catalog.VersionCAS, 1},
		{catalog.ValueCAS, 2},
	} {
		eachEnv(t, tc.strategy, func(t *testing.T, env Env) {
			ctx := context.Background()
			s := processor(t, tc.strategy)
			setup(t, env, s)
			// Intents 3 and 19: updates 0 and 1 of account 3.
			for _, intent := range []int{3, 3, 19, 3} {
				if _, err := s.Process(ctx, env, msg(intent), noCrash); err != nil {
					t.Fatal(err)
				}
			}
			if got := applied(t, env, 3); got != tc.want {
				t.Errorf("intent 3 applied %d times, want %d", got, tc.want)
			}
			if got := applied(t, env, 19); got != 1 {
				t.Errorf("intent 19 applied %d times, want 1", got)
			}
		})
	}
}
