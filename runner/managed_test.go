package runner

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/brokers/rabbitmq"
	"github.com/dqbench/dqbench/brokers/rabbitmq/cluster"
	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/internal/race"
	"github.com/dqbench/dqbench/scenario"

	"github.com/dqbench/dqbench/internal/testenv"
)

// TestManagedRabbitMQ starts one managed 3-node cluster (as "dqbench
// brokers up rabbitmq" does, in a state directory of its own) and runs
// against it: the rabbitmq-quorum-failover built-in (the leader named,
// the signs the README promises, the node running again afterwards), then "brokers down", after which no process
// of the cluster runs. One cluster for every subtest: a start takes about
// 20 s on two cores. Skipped when rabbitmq-server is not installed, unless
// DQBENCH_REQUIRE_BROKERS=1, and under -race unless DQBENCH_MANAGED_RACE=1
// (CI's time budget: the cluster is other processes, and the adapter's own
// code runs in the contract tests).
func TestManagedRabbitMQ(t *testing.T) {
	testenv.SkipShort(t, "a managed RabbitMQ cluster")
	if !cluster.Installed() {
		if os.Getenv("DQBENCH_REQUIRE_BROKERS") == "1" {
			t.Fatal("DQBENCH_REQUIRE_BROKERS=1 but rabbitmq-server is not installed (mode: managed needs it)")
		}
		t.Skip("rabbitmq-server is not installed: mode: managed cannot start a cluster")
	}
	if race.Enabled && os.Getenv("DQBENCH_MANAGED_RACE") != "1" {
		t.Skip("a managed cluster is too slow beside the race detector on two cores for CI; run without -race, or set DQBENCH_MANAGED_RACE=1")
	}
	// Its state directory is under TestMain's XDG_RUNTIME_DIR, fresh for
	// this test process.
	t.Parallel()

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cl, running, err := rabbitmq.Up(ctx, func() {})
	if err != nil {
		t.Fatal(err)
	}
	if running {
		t.Fatal("a fresh state directory had a running cluster")
	}
	t.Logf("3-node cluster up in %s", cl.StartDur)
	down := func() {
		if _, err := rabbitmq.Down(); err != nil {
			t.Error(err)
		}
	}
	defer func() {
		if cl != nil {
			down()
		}
	}()

	t.Run("quorum-failover", func(t *testing.T) {
		// One run: a second one for the repeat costs 12 s more of the CI
		// budget; the repeat is checked by hand (README).
		var seen [1]map[string][4]int
		for i := range seen {
			s, err := scenario.Resolve("rabbitmq-quorum-failover")
			if err != nil {
				t.Fatal(err)
			}
			// At load 22 the survivors took more than the built-in's 15 s
			// drain to elect a new leader and deliver again: the drain
			// gave up with 101 messages on the broker. The drain ends as
			// soon as everything is consumed, so a longer one only waits
			// longer for a slow election; the counts are the same.
			s.Drain = max(s.Drain, scenario.Duration(time.Minute))
			s.Deadline = max(s.Deadline, scenario.Duration(10*time.Minute))
			res, err := runJudged(t, ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Run.Passed || !res.Run.Valid() {
				t.Errorf("run did not pass: %+v", res.Run)
			}
			if !strings.Contains(res.Meta.Broker, "started by dqbench brokers up") {
				t.Errorf("the run did not reuse the cluster: %s", res.Meta.Broker)
			}
			seen[i] = map[string][4]int{}
			for _, v := range res.Run.Variants {
				c := map[string]int{}
				for _, name := range check.CountNames() {
					c[name], _ = v.Counts.Get(name)
				}
				stopped := slices.ContainsFunc(v.Notes, func(n string) bool {
					return strings.Contains(n, "leader-failover") && strings.Contains(n, "stopped RabbitMQ node "+cl.Nodes[0].Name)
				})
				if !stopped {
					t.Errorf("variant %s: the notes do not name the leader stopped: %q", v.Name, v.Notes)
				}
				if v.Attempted != s.Messages || c["lost"] != 0 || c["faults_injected"] != 1 {
					t.Errorf("variant %s: unexpected counts %v", v.Name, c)
				}
				seen[i][v.Name] = [4]int{c["redelivered"], c["duplicates"], c["lost"], c["faults_injected"]}
			}
			if len(res.Cleanup) > 0 {
				t.Errorf("cleanup: %v", res.Cleanup)
			}
			// The stopped node runs again once the run is over (it may
			// still be rejoining the cluster when the run returns).
			var reloaded *cluster.Cluster
			for wait := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
				if reloaded, err = rabbitmq.Status(); err != nil {
					t.Fatal(err)
				}
				if reloaded.Healthy() || time.Now().After(wait) {
					break
				}
			}
			if !reloaded.Healthy() {
				t.Errorf("a node of the cluster is not running 30s after the run: %+v", reloaded.Status())
				logs, _ := filepath.Glob(filepath.Join(reloaded.Dir, "log", "*.log"))
				for _, l := range logs {
					if b, err := os.ReadFile(l); err == nil {
						t.Logf("%s (end):\n%s", l, b[max(0, len(b)-3000):])
					}
				}
				t.FailNow()
			}
		}
		if seen[0]["none"][1] < 1 || seen[0]["none"][0] < 1 || seen[0]["dedup-table"][1] != 0 {
			t.Errorf("none should redeliver and duplicate, dedup-table not duplicate: %v", seen[0])
		}
	})

	t.Run("down", func(t *testing.T) {
		final, err := rabbitmq.Status()
		if err != nil {
			t.Fatal(err)
		}
		down()
		cl = nil
		if cluster.Running(final) {
			t.Errorf("a process of the cluster still runs after brokers down: %+v", final)
		}
		if _, err := rabbitmq.Status(); err != rabbitmq.ErrNoCluster {
			t.Errorf("status after down: %v, want ErrNoCluster", err)
		}
	})
}

// TestManagedWithoutRabbitMQServer: mode: managed without rabbitmq-server
// installed is a broker that cannot be reached (exit code 3), and the
// message names the other ways to a RabbitMQ.
func TestManagedWithoutRabbitMQServer(t *testing.T) {
	t.Setenv(cluster.BinEnv, t.TempDir())
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir()) // no cluster left by brokers up
	s, err := scenario.Resolve("rabbitmq-quorum-failover")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), s, Options{History: io.Discard})
	if !errors.Is(err, brokers.ErrUnreachable) {
		t.Fatalf("got %v, want an ErrUnreachable", err)
	}
	for _, want := range []string{"rabbitmq-server is not installed", "docker compose up -d rabbitmq", "mode: external", "--addresses"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the message does not say %q: %v", want, err)
		}
	}
}
