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
	"github.com/dqbench/dqbench/brokers/nats"
	"github.com/dqbench/dqbench/brokers/nats/cluster"
	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/scenario"

	"github.com/dqbench/dqbench/internal/testenv"
)

// TestManagedNATS starts one managed 3-node JetStream cluster (as
// "dqbench brokers up nats" does, in a state directory of its own) and
// runs the nats-stream-failover built-in against it: the killed node
// named, the signs the scenario promises, the node running again after
// the run; then "brokers down", after which no process of the cluster
// runs. Skipped when nats-server is not installed, unless
// DQBENCH_REQUIRE_BROKERS=1.
func TestManagedNATS(t *testing.T) {
	testenv.SkipShort(t, "a managed NATS cluster")
	if !cluster.Installed() {
		if os.Getenv("DQBENCH_REQUIRE_BROKERS") == "1" {
			t.Fatal("DQBENCH_REQUIRE_BROKERS=1 but nats-server is not installed (mode: managed needs it)")
		}
		t.Skip("nats-server is not installed: mode: managed cannot start a cluster")
	}
	t.Parallel() // its state directory: TestMain's XDG_RUNTIME_DIR
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl, running, err := nats.Up(ctx, func() {})
	if err != nil {
		t.Fatal(err)
	}
	if running {
		t.Fatal("a fresh state directory had a running cluster")
	}
	defer func() {
		final, err := nats.Status()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nats.Down(); err != nil {
			t.Error(err)
		}
		if cluster.Running(final) {
			t.Errorf("a node of the cluster still runs after brokers down: %+v", final)
		}
		if _, err := os.Stat(cl.Dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the cluster's directory is still there: %v", err)
		}
	}()

	s, err := scenario.Resolve("nats-stream-failover")
	if err != nil {
		t.Fatal(err)
	}
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
	for _, v := range res.Run.Variants {
		c := map[string]int{}
		for _, name := range check.CountNames() {
			c[name], _ = v.Counts.Get(name)
		}
		killed := slices.ContainsFunc(v.Notes, func(n string) bool {
			return strings.Contains(n, "leader-failover") && strings.Contains(n, "killed NATS node n") && strings.Contains(n, "the leader of stream")
		})
		if !killed {
			t.Errorf("variant %s: the notes do not name the node killed: %q", v.Name, v.Notes)
		}
		if v.Attempted != s.Messages || c["lost"] != 0 || c["faults_injected"] != 1 {
			t.Errorf("variant %s: unexpected counts %v", v.Name, c)
		}
		switch v.Name {
		case "none":
			if c["redelivered"] < 1 || c["duplicates"] < 1 {
				t.Errorf("none should be redelivered and duplicate: %v", c)
			}
		case "dedup-table":
			if c["duplicates"] != 0 {
				t.Errorf("dedup-table duplicated: %v", c)
			}
		}
	}
	if len(res.Cleanup) > 0 {
		t.Errorf("cleanup: %v", res.Cleanup)
	}
	// The killed node runs again once the run is over (Close restarts it
	// on a standing cluster).
	if after, err := nats.Status(); err != nil || !after.Healthy() {
		t.Errorf("the standing cluster is not whole after the run: %v %+v", err, after)
	}
}

// TestManagedWithoutNATSServer: mode: managed without nats-server is a
// broker that cannot be reached (exit code 3), and the message says how
// to install it and names the other ways to a NATS.
func TestManagedWithoutNATSServer(t *testing.T) {
	t.Setenv(cluster.BinEnv, filepath.Join(t.TempDir(), "nats-server"))
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir()) // no cluster left by brokers up
	s, err := scenario.Resolve("nats-stream-failover")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), s, Options{History: io.Discard})
	if !errors.Is(err, brokers.ErrUnreachable) {
		t.Fatalf("got %v, want an ErrUnreachable", err)
	}
	for _, want := range []string{"nats-server is not installed", "apt-get install nats-server", "docker compose up -d nats-1 nats-2 nats-3", "mode: external", "mode: embedded"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the message does not say %q: %v", want, err)
		}
	}
}
