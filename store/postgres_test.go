package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dqbench/dqbench/internal/testenv"
	"github.com/dqbench/dqbench/store"
)

// PostgresURL is the PostgreSQL the tests use: $DQBENCH_POSTGRES, or the
// one .ci/run starts.
func postgresURL() string {
	if u := os.Getenv("DQBENCH_POSTGRES"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/test"
}

var schemas atomic.Int64

// openPostgres opens a store in a schema of the test's own, or skips the
// test when no PostgreSQL answers.
func openPostgres(t testing.TB) *store.Postgres {
	t.Helper()
	name := fmt.Sprintf("storetest_%d_%d", os.Getpid(), schemas.Add(1))
	p, err := store.OpenPostgres(context.Background(), postgresURL(), store.SchemaFor(name), 4)
	if errors.Is(err, store.ErrUnreachable) {
		testenv.Unavailable(t, "no PostgreSQL (set DQBENCH_POSTGRES or start one): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p
}

// eachStore runs test on SQLite and, when one is reachable, PostgreSQL.
func eachStore(t *testing.T, test func(t *testing.T, s store.Store)) {
	t.Run("sqlite", func(t *testing.T) {
		s, _ := open(t)
		test(t, s)
	})
	t.Run("postgres", func(t *testing.T) { test(t, openPostgres(t)) })
}

func TestPostgresDropsItsSchema(t *testing.T) {
	p := openPostgres(t)
	schema := p.Schema()
	probe := openPostgres(t)
	exists := func() bool {
		var n int64
		tx(t, probe, func(tx store.Tx) (err error) {
			n, _, err = tx.QueryInt(`SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = ?`, schema)
			return err
		})
		return n == 1
	}
	if !exists() {
		t.Fatalf("schema %s does not exist after OpenPostgres", schema)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if exists() {
		t.Errorf("schema %s still exists after Close", schema)
	}
}

func TestPostgresUnreachable(t *testing.T) {
	start := time.Now()
	_, err := store.OpenPostgres(context.Background(), "postgres://postgres@127.0.0.1:1/test", "dqbench_unreachable", 1)
	if !errors.Is(err, store.ErrUnreachable) {
		t.Fatalf("OpenPostgres at a closed port = %v, want ErrUnreachable", err)
	}
	for _, want := range []string{"127.0.0.1:1", "start one"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error spans lines: %q", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s to give up", d)
	}
}

func TestQueryInt(t *testing.T) {
	eachStore(t, func(t *testing.T, s store.Store) {
		tx(t, s, func(tx store.Tx) error {
			n, found, err := tx.QueryInt(`SELECT balance FROM accounts WHERE id = ?`, 3)
			if err != nil || !found || n != 0 {
				t.Errorf("balance of account 3 = %d, %v, %v; want 0, found", n, found, err)
			}
			_, found, err = tx.QueryInt(`SELECT balance FROM accounts WHERE id = ?`, 999)
			if err != nil || found {
				t.Errorf("missing account: found = %v, err = %v; want not found", found, err)
			}
			return nil
		})
	})
}

func TestDollarPlaceholders(t *testing.T) {
	p := openPostgres(t)
	tx(t, p, func(tx store.Tx) error {
		n, err := tx.Exec(`UPDATE accounts SET balance = balance + ? WHERE id >= ? AND id < ?`, 5, 2, 4)
		if err != nil || n != 2 {
			t.Errorf("three placeholders: %d rows, %v; want 2", n, err)
		}
		return nil
	})
}

func TestSchemaFor(t *testing.T) {
	long := strings.Repeat("a", 64)
	a, b := store.SchemaFor(long+"-123456789-0"), store.SchemaFor(long+"-123456789-1")
	if a == b || len(a) > 63 || len(b) > 63 {
		t.Errorf("long names: %q and %q; want distinct, at most 63 bytes", a, b)
	}
	if got := store.SchemaFor("Strategies-Matrix-42-3"); got != "dqbench_strategies_matrix_42_3" {
		t.Errorf("SchemaFor = %q", got)
	}
}

// DropSchema removes a schema a killed run left (dqbench clean), and a
// schema already gone is no error.
func TestDropSchema(t *testing.T) {
	p := openPostgres(t)
	schema := p.Schema()
	if err := store.DropSchema(context.Background(), postgresURL(), schema); err != nil {
		t.Fatal(err)
	}
	if err := store.DropSchema(context.Background(), postgresURL(), schema); err != nil {
		t.Errorf("second drop: %v", err)
	}
	if _, err := p.Audit(context.Background()); err == nil {
		t.Error("the schema's tables are still there")
	}
	if err := store.DropSchema(context.Background(), postgresURL(), "x; DROP TABLE y"); err == nil {
		t.Error("a name dqbench does not make was accepted")
	}
}
