package store

import (
	"context"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/history"
)

// The service takes effect on every call without a key, and once per key:
// a repeated key gets the first call's payment number back and is
// recorded as a replay.
func TestServiceHonoursIdempotencyKey(t *testing.T) {
	svc, err := StartService()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := svc.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	ctx := context.Background()
	e := Effect{Intent: 5, Account: 5, Amount: 10}
	pay := func(key string) int {
		t.Helper()
		n, err := svc.Pay(ctx, e, key)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	first, again := pay("5"), pay("5")
	if first != 1 || again != first {
		t.Errorf("with a key: payments %d then %d, want 1 then the same", first, again)
	}
	if a, b := pay(""), pay(""); a != 2 || b != 3 {
		t.Errorf("without a key: payments %d and %d, want 2 and 3", a, b)
	}
	want := []history.Call{{Intent: 5, Key: "5"}, {Intent: 5, Key: "5", Replayed: true}, {Intent: 5}, {Intent: 5}}
	got := svc.Calls()
	if len(got) != len(want) {
		t.Fatalf("calls %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("call %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if n := history.CallEffects(got)[5]; n != 3 {
		t.Errorf("recounted %d effects, want 3", n)
	}
	resp, err := http.Get(strings.TrimSuffix(svc.url, "/payments") + "/other")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /other: %s, want 404", resp.Status)
	}
}

// What each effect kind's audit counts: an intent applied twice, one
// applied once, one never (lost), on SQLite.
func TestEffectAudit(t *testing.T) {
	for _, e := range catalog.Effects {
		if e.Kind == catalog.Create {
			continue // unique-key's order row: strategy tests
		}
		t.Run(string(e.Kind), func(t *testing.T) {
			ctx := context.Background()
			sq, err := OpenSQLite(ctx, filepath.Join(t.TempDir(), "s.db"))
			if err != nil {
				t.Fatal(err)
			}
			st, err := WithEffect(ctx, sq, e.Kind, 3)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := st.Close(); err != nil {
					t.Errorf("close: %v", err)
				}
			}()
			for _, intent := range []int{1, 1, 2} {
				err := st.Tx(ctx, func(tx Tx) error {
					return tx.Apply(Effect{Intent: intent, Account: intent, Amount: 10, Key: strconv.Itoa(intent)})
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			a, err := st.Audit(ctx)
			if err != nil {
				t.Fatal(err)
			}
			twice := 2
			if e.Idempotent {
				twice = 1
			}
			if a.Applied[1] != twice || a.Applied[2] != 1 || a.Applied[3] != 0 || len(a.BalanceMismatch) != 0 {
				t.Errorf("audit %+v, want intent 1 counted %d, 2 once, 3 never", a, twice)
			}
			if e.Kind.IsCall() != (len(a.Calls) == 3) {
				t.Errorf("calls %+v", a.Calls)
			}
		})
	}
}

// An effect kind this build lacks is an error, and the store is closed.
func TestWithEffectUnknown(t *testing.T) {
	ctx := context.Background()
	sq, err := OpenSQLite(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := WithEffect(ctx, sq, "teleport", 3); err == nil || !strings.Contains(err.Error(), `"teleport" is not supported`) {
		t.Errorf("got %v", err)
	}
	if err := sq.Setup(ctx, `SELECT 1`); err == nil {
		t.Error("the store is still open")
	}
}
