package strategy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/internal/testenv"
	"github.com/dqbench/dqbench/store"
)

func postgresURL() string {
	if u := os.Getenv("DQBENCH_POSTGRES"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/test"
}

func redisURL() string {
	if u := os.Getenv("DQBENCH_REDIS"); u != "" {
		return u
	}
	return catalog.DefaultRedis
}

var envs atomic.Int64

// testIntents is how many intents a test env says the run publishes.
const testIntents = 100

// eachEnv runs test for strategy name on SQLite and, when reachable,
// PostgreSQL, with a Redis client (under a key prefix of the test's own)
// when the strategy needs one; it skips what is not reachable, saying so.
func eachEnv(t *testing.T, name catalog.StrategyName, test func(t *testing.T, env Env)) {
	desc, _ := catalog.LookupStrategy(name)
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(string(name)+"/"+kind, func(t *testing.T) {
			ctx := context.Background()
			id := fmt.Sprintf("strategytest_%d_%d", os.Getpid(), envs.Add(1))
			var st store.Store
			var err error
			if kind == "sqlite" {
				st, err = store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "s.db"))
			} else {
				st, err = store.OpenPostgres(ctx, postgresURL(), store.SchemaFor(id), 4)
			}
			if errors.Is(err, store.ErrUnreachable) {
				testenv.Unavailable(t, "no PostgreSQL (set DQBENCH_POSTGRES or start one): %v", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := st.Close(); err != nil {
					t.Errorf("close store: %v", err)
				}
			})
			env := Env{Store: st, Intents: testIntents}
			if desc.NeedsRedis {
				rd, err := store.OpenRedis(ctx, redisURL(), "dqbench-test:"+id+":")
				if errors.Is(err, store.ErrUnreachable) {
					testenv.Unavailable(t, "no Redis (set DQBENCH_REDIS or start one): %v", err)
				}
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					if err := rd.Close(); err != nil {
						t.Errorf("close redis: %v", err)
					}
				})
				env.Redis = rd
			}
			test(t, env)
		})
	}
}
