package strategy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dqbench/dqbench/catalog"
)

func applied(t *testing.T, env Env, intent int) int {
	t.Helper()
	a, err := env.Store.Audit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(a.BalanceMismatch) != 0 {
		t.Errorf("balances disagree with the ledger: %v", a.BalanceMismatch)
	}
	return a.Applied[intent]
}

// processor is the built-in strategy name, which processes deliveries
// itself (every built-in does).
func processor(t *testing.T, name catalog.StrategyName) Processor {
	t.Helper()
	p, ok := All[name].(Processor)
	if !ok {
		t.Fatalf("strategy %s is not a strategy.Processor", name)
	}
	return p
}

func setup(t *testing.T, env Env, s Strategy) {
	t.Helper()
	if err := s.Setup(context.Background(), env); err != nil {
		t.Fatal(err)
	}
}

// An update that arrives before the one it follows is rejected, not
// applied and not taken for a duplicate; the earlier one still applies.
func TestVersionCASOutOfOrder(t *testing.T) {
	eachEnv(t, "version-cas", func(t *testing.T, env Env) {
		ctx := context.Background()
		s := VersionCAS{}
		setup(t, env, s)
		later := msg(3 + 16) // account 3's second update: expects version 1
		out, err := s.Process(ctx, env, later, noCrash)
		if err != nil || out.Applied || !out.Rejected || !strings.Contains(out.Reason, "out of order") {
			t.Fatalf("later update first: %+v, %v; want rejected as out of order", out, err)
		}
		if out, err := s.Process(ctx, env, msg(3), noCrash); err != nil || !out.Applied {
			t.Fatalf("earlier update: %+v, %v; want applied", out, err)
		}
		out, err = s.Process(ctx, env, msg(3), noCrash)
		if err != nil || out.Applied || out.Rejected {
			t.Fatalf("earlier update again: %+v, %v; want skipped as a duplicate", out, err)
		}
		if applied(t, env, 3+16) != 0 || applied(t, env, 3) != 1 {
			t.Error("want the earlier update applied once and the rejected one not at all")
		}
	})
}

// A payment for an order that does not exist is an illegal transition:
// rejected, not applied.
func TestStateMachineIllegalTransition(t *testing.T) {
	eachEnv(t, "state-machine", func(t *testing.T, env Env) {
		s := StateMachine{}
		setup(t, env, s)
		out, err := s.Process(context.Background(), env, msg(testIntents+1), noCrash)
		if err != nil || out.Applied || !out.Rejected {
			t.Fatalf("payment of an order that is not PENDING: %+v, %v; want rejected", out, err)
		}
	})
}

// Two instances with the same intent in flight: the second checks while the
// first is between its check and its act. Both apply.
func TestCheckThenActRace(t *testing.T) {
	eachEnv(t, "check-then-act", func(t *testing.T, env Env) {
		ctx := context.Background()
		s := CheckThenAct{}
		setup(t, env, s)
		var second Outcome
		var secondErr error
		first, err := s.Process(ctx, env, msg(1), func(p catalog.CrashPoint) error {
			if p == catalog.BetweenCheckAndAct {
				// The other instance runs now, while this one is stalled.
				second, secondErr = s.Process(ctx, env, msg(1), noCrash)
			}
			return nil
		})
		if err != nil || secondErr != nil || !first.Applied || !second.Applied {
			t.Fatalf("first %+v %v, second %+v %v; want both applied", first, err, second, secondErr)
		}
		if n := applied(t, env, 1); n != 2 {
			t.Errorf("applied %d times, want 2 (the race)", n)
		}
	})
}

// The same race against the dedup table: its constraint lets one through.
func TestDedupTableHoldsTheRace(t *testing.T) {
	eachEnv(t, "dedup-table", func(t *testing.T, env Env) {
		ctx := context.Background()
		s := DedupTable{}
		setup(t, env, s)
		if _, err := s.Process(ctx, env, msg(1), noCrash); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Process(ctx, env, msg(1), noCrash); err != nil {
			t.Fatal(err)
		}
		if n := applied(t, env, 1); n != 1 {
			t.Errorf("applied %d times, want 1", n)
		}
	})
}

// A dedup row older than the retention is deleted: a redelivery after that
// applies again; within it, it does not.
func TestDedupRetention(t *testing.T) {
	eachEnv(t, "dedup-table", func(t *testing.T, env Env) {
		ctx := context.Background()
		now := time.Unix(1_700_000_000, 0)
		env.Now = func() time.Time { return now }
		env.Params = &catalog.DedupTableParams{Retention: catalog.Duration(time.Minute)}
		s := DedupTable{}
		setup(t, env, s)
		for _, step := range []struct {
			after time.Duration
			want  bool
		}{{0, true}, {30 * time.Second, false}, {2 * time.Minute, true}} {
			now = now.Add(step.after)
			out, err := s.Process(ctx, env, msg(1), noCrash)
			if err != nil || out.Applied != step.want {
				t.Fatalf("%s later: applied = %v, %v; want %v", step.after, out.Applied, err, step.want)
			}
		}
		if n := applied(t, env, 1); n != 2 {
			t.Errorf("applied %d times, want 2", n)
		}
	})
}

// A Redis key that expires before the redelivery lets it apply again.
func TestSetnxTTLShorterThanRedelivery(t *testing.T) {
	eachEnv(t, "redis-setnx", func(t *testing.T, env Env) {
		ctx := context.Background()
		env.Params = &catalog.RedisSetNXParams{TTL: catalog.Duration(5 * time.Millisecond)}
		s := RedisSetNX{}
		setup(t, env, s)
		if out, err := s.Process(ctx, env, msg(1), noCrash); err != nil || !out.Applied {
			t.Fatalf("first: %+v, %v", out, err)
		}
		time.Sleep(50 * time.Millisecond)
		if out, err := s.Process(ctx, env, msg(1), noCrash); err != nil || !out.Applied {
			t.Fatalf("after the TTL: %+v, %v; want applied again", out, err)
		}
		if n := applied(t, env, 1); n != 2 {
			t.Errorf("applied %d times, want 2", n)
		}
	})
}
