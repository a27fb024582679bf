package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/store"
)

// modernc's SQLite starts no goroutine that outlives Close.
// TestMain keeps the tests' ledger entries (schemas, keys a frozen server
// kept) out of the user's ledger, which the next dqbench run sweeps.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "storetest-ledger-")
	if err != nil {
		panic(err)
	}
	os.Setenv("DQBENCH_LEDGER_DIR", dir)
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		os.Exit(code)
	}))
}

func open(t testing.TB) (*store.SQLite, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := store.OpenSQLite(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s, path
}

func tx(t testing.TB, s store.Store, fn func(store.Tx) error) {
	t.Helper()
	if err := s.Tx(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

func audit(t testing.TB, s store.Store) history.Audit {
	t.Helper()
	a, err := s.Audit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// balanceIs reports whether account id holds want, through the seam: an
// update that changes nothing reports the rows it matched.
func balanceIs(t testing.TB, s store.Store, id int, want int64) bool {
	t.Helper()
	var n int64
	tx(t, s, func(tx store.Tx) (err error) {
		n, err = tx.Exec(`UPDATE accounts SET balance = balance WHERE id = ? AND balance = ?`, id, want)
		return err
	})
	return n == 1
}

func TestOpenCreatesAccounts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := store.OpenSQLite(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	count := func(s store.Store) int64 {
		var n int64
		tx(t, s, func(tx store.Tx) (err error) {
			n, err = tx.Exec(`UPDATE accounts SET balance = balance WHERE id >= 0 AND id < ? AND balance = 0`, store.Accounts)
			return err
		})
		return n
	}
	if n := count(s); n != store.Accounts {
		t.Errorf("a new store has %d zero accounts with ids 0..%d, want %d", n, store.Accounts-1, store.Accounts)
	}
	if a := audit(t, s); len(a.Applied) != 0 || len(a.BalanceMismatch) != 0 {
		t.Errorf("a new store audits as %+v, want empty", a)
	}

	// Opening the file again keeps what is there and adds no accounts;
	// Close must release the exclusive lock for this open to succeed.
	tx(t, s, func(tx store.Tx) error { return tx.Apply(store.Effect{Intent: 1, Account: 2, Amount: 7}) })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := store.OpenSQLite(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if n := count(s2); n != store.Accounts-1 {
		t.Errorf("reopened store has %d zero accounts, want %d (one holds 7)", n, store.Accounts-1)
	}
	if a := audit(t, s2); a.Applied[1] != 1 {
		t.Errorf("reopened store audits as %+v, want intent 1 applied once", a)
	}
}

func TestOpenBadPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "store.db")
	if _, err := store.OpenSQLite(context.Background(), path); err == nil {
		t.Fatalf("OpenSQLite(%s) in a missing directory succeeded", path)
	}
}

var errBoom = errors.New("boom")

func TestTxCommitsOrRollsBack(t *testing.T) { eachStore(t, testTxCommitsOrRollsBack) }

func testTxCommitsOrRollsBack(t *testing.T, s store.Store) {
	tx(t, s, func(tx store.Tx) error { return tx.Apply(store.Effect{Intent: 1, Account: 3, Amount: 5}) })

	err := s.Tx(context.Background(), func(tx store.Tx) error {
		if err := tx.Apply(store.Effect{Intent: 2, Account: 3, Amount: 100}); err != nil {
			return err
		}
		return fmt.Errorf("strategy gave up: %w", errBoom)
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("Tx = %v, want fn's error", err)
	}
	a := audit(t, s)
	if want := map[int]int{1: 1}; !reflect.DeepEqual(a.Applied, want) {
		t.Errorf("after a failed tx, ledger rows per intent %v, want %v (intent 2 rolled back)", a.Applied, want)
	}
	if !balanceIs(t, s, 3, 5) {
		t.Error("the failed tx's balance update was not rolled back: account 3 is not 5")
	}

	// A failed statement inside fn rolls back too, and the store goes on.
	err = s.Tx(context.Background(), func(tx store.Tx) error {
		if _, err := tx.Exec(`INSERT INTO ledger (intent, account, amount) VALUES (?, ?, ?)`, 9, 0, 1); err != nil {
			return err
		}
		_, err := tx.Exec(`INSERT INTO no_such_table VALUES (1)`)
		return err
	})
	if err == nil {
		t.Fatal("Tx with a bad statement succeeded")
	}
	if a := audit(t, s); a.Applied[9] != 0 {
		t.Errorf("ledger row of the failed tx is present: %v", a.Applied)
	}
	tx(t, s, func(tx store.Tx) error { return tx.Apply(store.Effect{Intent: 3, Account: 0, Amount: 1}) })
}

func TestExecRowsAffected(t *testing.T) { eachStore(t, testExecRowsAffected) }

func testExecRowsAffected(t *testing.T, s store.Store) {
	if err := s.Setup(context.Background(), `CREATE TABLE processed (intent INTEGER PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		query string
		args  []any
		want  int64
	}{
		{`INSERT INTO processed (intent) VALUES (?) ON CONFLICT DO NOTHING`, []any{1}, 1},
		{`INSERT INTO processed (intent) VALUES (?) ON CONFLICT DO NOTHING`, []any{1}, 0}, // the dedup check: seen before
		{`INSERT INTO processed (intent) VALUES (?) ON CONFLICT DO NOTHING`, []any{2}, 1},
		{`UPDATE accounts SET balance = balance + ? WHERE id < ?`, []any{1, 4}, 4},
		{`DELETE FROM processed WHERE intent > ?`, []any{0}, 2},
		{`DELETE FROM processed WHERE intent > ?`, []any{0}, 0},
	} {
		var got int64
		tx(t, s, func(tx store.Tx) (err error) {
			got, err = tx.Exec(tc.query, tc.args...)
			return err
		})
		if got != tc.want {
			t.Errorf("Exec(%s, %v) = %d rows, want %d", tc.query, tc.args, got, tc.want)
		}
	}
}

func TestApplyAndAudit(t *testing.T) { eachStore(t, testApplyAndAudit) }

func testApplyAndAudit(t *testing.T, s store.Store) {
	tx(t, s, func(tx store.Tx) error {
		for _, e := range []store.Effect{
			{Intent: 1, Account: 3, Amount: 5},
			{Intent: 1, Account: 3, Amount: 5}, // Apply is not idempotent
			{Intent: 2, Account: 7, Amount: -2},
		} {
			if err := tx.Apply(e); err != nil {
				return err
			}
		}
		return nil
	})
	a := audit(t, s)
	if want := map[int]int{1: 2, 2: 1}; !reflect.DeepEqual(a.Applied, want) {
		t.Errorf("ledger rows per intent %v, want %v", a.Applied, want)
	}
	if len(a.BalanceMismatch) != 0 {
		t.Errorf("balances mismatch %v after Apply only", a.BalanceMismatch)
	}
	if !balanceIs(t, s, 3, 10) || !balanceIs(t, s, 7, -2) {
		t.Error("Apply did not move the balances: want account 3 at 10, 7 at -2")
	}

	// A balance changed behind the ledger's back is caught.
	tx(t, s, func(tx store.Tx) error {
		_, err := tx.Exec("UPDATE accounts SET balance = balance + 1 WHERE id = 3")
		return err
	})
	if a := audit(t, s); !reflect.DeepEqual(a.BalanceMismatch, []int{3}) {
		t.Errorf("BalanceMismatch = %v, want [3]", a.BalanceMismatch)
	}
}

func TestTxCancelledContext(t *testing.T) { eachStore(t, testTxCancelledContext) }

func testTxCancelledContext(t *testing.T, s store.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	err := s.Tx(ctx, func(store.Tx) error { called = true; return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Tx with a cancelled context = %v, want context.Canceled", err)
	}
	if called {
		t.Error("Tx ran fn with a cancelled context")
	}
	// No transaction was left open.
	tx(t, s, func(tx store.Tx) error { return tx.Apply(store.Effect{Intent: 1, Account: 1, Amount: 1}) })
}

func TestTxConcurrent(t *testing.T) { eachStore(t, testTxConcurrent) }

func testTxConcurrent(t *testing.T, s store.Store) {
	const workers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				intent := w*each + i + 1
				errs <- s.Tx(context.Background(), func(tx store.Tx) error {
					return tx.Apply(store.Effect{Intent: intent, Account: intent % store.Accounts, Amount: int64(intent)})
				})
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	a := audit(t, s)
	if len(a.Applied) != workers*each {
		t.Errorf("%d intents in the ledger, want %d", len(a.Applied), workers*each)
	}
	for intent := 1; intent <= workers*each; intent++ {
		if a.Applied[intent] != 1 {
			t.Errorf("intent %d: %d ledger rows, want 1", intent, a.Applied[intent])
		}
	}
	if len(a.BalanceMismatch) != 0 {
		t.Errorf("balances mismatch %v", a.BalanceMismatch)
	}
	// No update was lost: each account holds the sum of its intents.
	want := make([]int64, store.Accounts)
	for intent := 1; intent <= workers*each; intent++ {
		want[intent%store.Accounts] += int64(intent)
	}
	for id, w := range want {
		if !balanceIs(t, s, id, w) {
			t.Errorf("account %d is not %d", id, w)
		}
	}
}

// BenchmarkTx is one delivery under the dedup-table strategy: a dedup
// insert and the effect in one transaction.
func BenchmarkTx(b *testing.B) {
	s, _ := open(b)
	if err := s.Setup(context.Background(), `CREATE TABLE processed (intent INTEGER PRIMARY KEY)`); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	intent := 0
	for b.Loop() {
		intent++
		err := s.Tx(ctx, func(tx store.Tx) error {
			n, err := tx.Exec(`INSERT INTO processed (intent) VALUES (?) ON CONFLICT DO NOTHING`, intent)
			if err != nil || n == 0 {
				return err
			}
			return tx.Apply(store.Effect{Intent: intent, Account: intent % store.Accounts, Amount: 1})
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// A "#" or "?" in the path names that file, not a shorter one.
func TestOpenPathWithURIDelimiters(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a#1.db", "a#2.db", "b?x.db"} {
		s, err := store.OpenSQLite(context.Background(), filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		tx(t, s, func(tx store.Tx) error { return tx.Apply(store.Effect{Intent: 1, Account: 1, Amount: 1}) })
		a := audit(t, s)
		s.Close()
		if a.Applied[1] != 1 {
			t.Errorf("%s: intent 1 applied %d times; the file is shared with another", name, a.Applied[1])
		}
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
