package strategy

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/dqbench/dqbench/faults"
	"github.com/dqbench/dqbench/store"
)

var errCrash = errors.New("crash")

func noCrash(faults.Point) error { return nil }

func crashAt(p faults.Point) CrashHook {
	return func(at faults.Point) error {
		if at == p {
			return errCrash
		}
		return nil
	}
}

func msg(intent int) Message {
	return Message{ID: strconv.Itoa(intent), Effect: store.Effect{Intent: intent, Account: intent % store.Accounts, Amount: 10}}
}

// TestRedelivery processes each message twice, as a redelivery would, and
// checks how often the effect applied.
func TestRedelivery(t *testing.T) {
	for _, tc := range []struct {
		strategy Strategy
		want     int // applications of one intent delivered twice
	}{
		{None{}, 2},
		{DedupTable{}, 1},
		{DedupTableSplit{}, 1},
	} {
		t.Run(tc.strategy.Name(), func(t *testing.T) {
			ctx := context.Background()
			db, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := tc.strategy.Setup(ctx, db); err != nil {
				t.Fatal(err)
			}
			first, err := tc.strategy.Process(ctx, db, msg(1), noCrash)
			if err != nil || !first.Applied {
				t.Fatalf("first delivery: %+v, %v", first, err)
			}
			second, err := tc.strategy.Process(ctx, db, msg(1), noCrash)
			if err != nil {
				t.Fatal(err)
			}
			if second.Applied != (tc.want == 2) {
				t.Errorf("second delivery applied = %v", second.Applied)
			}
			audit, err := store.ReadAudit(ctx, db)
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
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := DedupTableSplit{}
	if err := s.Setup(ctx, db); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Process(ctx, db, msg(1), crashAt(faults.BetweenDedupAndEffect)); !errors.Is(err, errCrash) {
		t.Fatalf("want the crash, got %v", err)
	}
	out, err := s.Process(ctx, db, msg(1), noCrash)
	if err != nil || out.Applied || out.Reason == "" {
		t.Fatalf("redelivery: %+v, %v; want skipped with a reason", out, err)
	}
	audit, err := store.ReadAudit(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if audit.Applied[1] != 0 {
		t.Errorf("the effect applied %d times; the split strategy should have lost it", audit.Applied[1])
	}
}

func TestCrashPoints(t *testing.T) {
	if !HasPoint(None{}, faults.AfterEffectBeforeAck) || !HasPoint(None{}, faults.BeforeProcess) {
		t.Error("every strategy has the consumer loop's crash points")
	}
	if HasPoint(None{}, faults.BetweenDedupAndEffect) || HasPoint(DedupTable{}, faults.BetweenDedupAndEffect) {
		t.Error("only the split strategy has a point between dedup and effect")
	}
	if !HasPoint(DedupTableSplit{}, faults.BetweenDedupAndEffect) {
		t.Error("the split strategy must expose between-dedup-and-effect")
	}
	for _, s := range All {
		if got, ok := Lookup(s.Name()); !ok || got.Name() != s.Name() {
			t.Errorf("Lookup(%q) failed", s.Name())
		}
	}
}
