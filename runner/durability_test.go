package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dqbench/dqbench/brokers/rabbitmq/cluster"
	"github.com/dqbench/dqbench/internal/race"
	"github.com/dqbench/dqbench/scenario"
)

// TestManagedRabbitMQDurability runs the rabbitmq-durability built-in on
// its own single managed node and checks the seeds' table against the
// restart's intent N, read from the history: with durable queue,
// persistent messages and confirms nothing is lost; with confirms off the
// in-flight publish N is lost at least; with a transient queue or
// transient messages every intent the queue held (1..N-1) is lost, and N
// too without confirms (with them, its retry is stored after the restart).
// Skipped like TestManagedRabbitMQ.
func TestManagedRabbitMQDurability(t *testing.T) {
	if !cluster.Installed() {
		if os.Getenv("DQBENCH_REQUIRE_BROKERS") == "1" {
			t.Fatal("DQBENCH_REQUIRE_BROKERS=1 but rabbitmq-server is not installed (mode: managed needs it)")
		}
		t.Skip("rabbitmq-server is not installed: mode: managed cannot start a node")
	}
	if testing.Short() || race.Enabled && os.Getenv("DQBENCH_MANAGED_RACE") != "1" {
		t.Skip("a managed node is too slow for -short or beside the race detector; run without them, or set DQBENCH_MANAGED_RACE=1")
	}
	s, err := scenario.Resolve("rabbitmq-durability")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := runJudged(t, ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	n := restartIntent(t, res.History)
	for _, v := range res.Run.Variants {
		durable := strings.HasPrefix(v.Name, "durable-")
		persistent := strings.Contains(v.Name, "-persistent-")
		confirms := strings.HasSuffix(v.Name, "-confirms") && !strings.HasSuffix(v.Name, "-noconfirms")
		if v.FaultsInjected != 1 {
			t.Errorf("%s: faults_injected %d, want 1 (one restart)", v.Name, v.FaultsInjected)
		}
		var want string
		switch {
		case durable && persistent && confirms:
			if v.Lost != 0 || v.Indeterminate != 0 {
				t.Errorf("%s: lost %d, indeterminate %d; want 0 and 0", v.Name, v.Lost, v.Indeterminate)
			}
			continue
		case durable && persistent:
			if v.Lost < 1 || v.Lost > n {
				want = "from 1 to N"
			}
		case confirms:
			if v.Lost != n-1 {
				want = "N-1"
			}
		default:
			if v.Lost != n {
				want = "N"
			}
		}
		if want != "" {
			t.Errorf("%s: lost %d, want %s (the restart hit intent N = %d)", v.Name, v.Lost, want, n)
		}
		if v.Duplicates != 0 {
			t.Errorf("%s: duplicates %d, want 0 (no consumer ran before the restart)", v.Name, v.Duplicates)
		}
		if !v.Passed {
			t.Errorf("%s: expectations failed: %+v", v.Name, v.Expectations)
		}
	}
}

// restartIntent is the intent of the history's broker-restart fault.
func restartIntent(t *testing.T, hist []byte) int {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(hist))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e struct {
			Type, Fault string
			Intent      int
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Type == "fault" && e.Fault == "broker-restart" {
			return e.Intent
		}
	}
	t.Fatal("no broker-restart fault in the history")
	return 0
}
