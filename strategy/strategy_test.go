package strategy

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/store"
)

var errCrash = errors.New("crash")

func noCrash(catalog.CrashPoint) error { return nil }

func crashAt(p catalog.CrashPoint) CrashHook {
	return func(at catalog.CrashPoint) error {
		if at == p {
			return errCrash
		}
		return nil
	}
}

func msg(intent int) Message {
	return Message{ID: strconv.Itoa(intent), Effect: store.Effect{Intent: intent, Account: intent % store.Accounts, Amount: 10}, Version: ExpectedVersion(intent)}
}

// TestRedelivery processes each message twice, as a redelivery would, and
// checks how often the effect applied, on every store.
func TestRedelivery(t *testing.T) {
	for _, tc := range []struct {
		strategy catalog.StrategyName
		params   any
		effect   catalog.EffectKind
		want     int // applications of one intent delivered twice
	}{
		{"none", nil, "", 2},
		{"dedup-table", nil, "", 1},
		{"dedup-table-split", nil, "", 1},
		{"unique-key", nil, catalog.Create, 1},
		{"unique-key", nil, catalog.Increment, 2}, // no natural unique row
		{"unique-key", nil, catalog.Append, 2},    // nor here
		{"conditional-update", nil, "", 2},        // the balance covers it twice
		{"value-cas", nil, "", 1},                 // right after it, the value has moved on
		{"state-machine", nil, "", 1},
		{"version-cas", nil, "", 1},
		{"check-then-act", nil, "", 1}, // one at a time, it holds
		{"redis-setnx", nil, "", 1},
	} {
		eachEnv(t, tc.strategy, func(t *testing.T, env Env) {
			ctx := context.Background()
			env.Params = tc.params
			env.Effect = tc.effect
			st := processor(t, tc.strategy)
			if err := st.Setup(ctx, env); err != nil {
				t.Fatal(err)
			}
			first, err := st.Process(ctx, env, msg(1), noCrash)
			if err != nil || !first.Applied {
				t.Fatalf("first delivery: %+v, %v", first, err)
			}
			second, err := st.Process(ctx, env, msg(1), noCrash)
			if err != nil {
				t.Fatal(err)
			}
			if second.Applied != (tc.want == 2) {
				t.Errorf("second delivery applied = %v", second.Applied)
			}
			audit, err := env.Store.Audit(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if audit.Applied[1] != tc.want || len(audit.BalanceMismatch) != 0 {
				t.Errorf("audit %+v, want %d applications", audit, tc.want)
			}
		})
	}
}

// TestSplitLosesOnCrashBetween: the fake-idempotency anti-pattern commits the
// marker, dies, and then skips the redelivery: the effect never applies.
func TestSplitLosesOnCrashBetween(t *testing.T) {
	for _, tc := range []struct {
		strategy catalog.StrategyName
		point    catalog.CrashPoint
	}{
		{"dedup-table-split", catalog.BetweenDedupAndEffect},
		{"redis-setnx", catalog.BetweenSetnxAndEffect},
	} {
		eachEnv(t, tc.strategy, func(t *testing.T, env Env) { testLosesOnCrashBetween(t, env, processor(t, tc.strategy), tc.point) })
	}
}

func testLosesOnCrashBetween(t *testing.T, env Env, s Processor, point catalog.CrashPoint) {
	ctx := context.Background()
	if err := s.Setup(ctx, env); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Process(ctx, env, msg(1), crashAt(point)); !errors.Is(err, errCrash) {
		t.Fatalf("want the crash, got %v", err)
	}
	out, err := s.Process(ctx, env, msg(1), noCrash)
	if err != nil || out.Applied || out.Reason == "" {
		t.Fatalf("redelivery: %+v, %v; want skipped with a reason", out, err)
	}
	audit, err := env.Store.Audit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if audit.Applied[1] != 0 {
		t.Errorf("the effect applied %d times; the split strategy should have lost it", audit.Applied[1])
	}
}

// Every strategy in the catalog has an implementation, and no other.
func TestEveryCatalogStrategyIsImplemented(t *testing.T) {
	for _, st := range catalog.Strategies {
		if All[st.Name] == nil {
			t.Errorf("strategy %s has no implementation in strategy.All", st.Name)
		}
	}
	if len(All) != len(catalog.Strategies) {
		t.Errorf("strategy.All has %d implementations for %d catalog strategies", len(All), len(catalog.Strategies))
	}
}

// A strategy calls the crash hook exactly at the points the catalog lists
// for it, besides the loop's: the variant's instance does, as Open makes
// it (a Stateful strategy's New).
func TestCrashPointsMatchTheCatalog(t *testing.T) {
	for _, st := range catalog.Strategies {
		eachEnv(t, st.Name, func(t *testing.T, env Env) {
			var called []catalog.CrashPoint
			inst, err := Open(context.Background(), st.Name, env)
			if err != nil {
				t.Fatal(err)
			}
			defer inst.Close()
			_, err = inst.Process(context.Background(), env, msg(1), func(p catalog.CrashPoint) error {
				called = append(called, p)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(called) != len(st.CrashPoints) {
				t.Fatalf("crash hook called at %v, catalog lists %v", called, st.CrashPoints)
			}
			for i := range called {
				if called[i] != st.CrashPoints[i] {
					t.Errorf("crash hook called at %v, catalog lists %v", called, st.CrashPoints)
				}
			}
		})
	}
}

// Open sets a strategy up and gives a stateless one as its own instance,
// with a Close that does nothing; a name this build lacks is an error.
func TestOpen(t *testing.T) {
	eachEnv(t, catalog.DedupTable, func(t *testing.T, env Env) {
		ctx := context.Background()
		inst, err := Open(ctx, catalog.DedupTable, env)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := inst.Process(ctx, env, msg(1), noCrash); err != nil || !out.Applied {
			t.Errorf("first delivery: %+v, %v", out, err)
		}
		if out, err := inst.Process(ctx, env, msg(1), noCrash); err != nil || out.Applied {
			t.Errorf("second delivery: %+v, %v (Setup made no dedup table?)", out, err)
		}
		if err := inst.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	_, err := Open(context.Background(), "no-such-strategy", Env{})
	if want := `strategy "no-such-strategy" is not supported by this build`; err == nil || err.Error() != want {
		t.Errorf("unknown strategy: %v, want %s", err, want)
	}
}
