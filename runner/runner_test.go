package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"go.uber.org/goleak"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/netfault"
	"github.com/dqbench/dqbench/scenario"
)

func TestMain(m *testing.M) {
	// The managed clusters' state directories (dqbench-brokers/KIND)
	// under a directory of the tests' own, for the whole process: set
	// once here, the tests that start clusters need no t.Setenv and may
	// run in parallel. The nodes run as the rabbitmq user, who must reach
	// it: not 0700.
	state, err := os.MkdirTemp("", "dqbench-runner-test-")
	if err == nil {
		err = os.Chmod(state, 0o755)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_RUNTIME_DIR", state)
	goleak.VerifyTestMain(m, append([]goleak.Option{
		// modernc's SQLite and kgo keep no goroutines after Close; the
		// signal watcher below belongs to the Go runtime.
		goleak.IgnoreTopFunction("os/signal.signal_recv"),
		goleak.Cleanup(func(code int) {
			os.RemoveAll(state)
			os.Exit(code)
		}),
	}, ignoreStuckInToxiproxy()...)...)
}

// ignoreStuckInToxiproxy ignores the goroutines toxiproxy v2.12.0 can
// leave blocked (netfault.StuckInToxiproxy).
func ignoreStuckInToxiproxy() []goleak.Option {
	var out []goleak.Option
	for _, fn := range netfault.StuckInToxiproxy {
		out = append(out, goleak.IgnoreTopFunction(fn))
	}
	return out
}

// judged is a run and the judgement of its history.
type judged struct {
	*Result
	Run     check.Run
	History []byte // history.jsonl as written
}

// passed runs s (runJudged) and stops the test unless the run passed and
// is valid.
func passed(t *testing.T, s *scenario.Scenario) *judged {
	t.Helper()
	res, err := runJudged(t, context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Run.Passed || !res.Run.Valid() {
		t.Fatalf("%s did not pass: %+v", s.Name, res.Run)
	}
	return res
}

// passedBuiltin runs built-in name as shipped (passed).
func passedBuiltin(t *testing.T, name string) *judged {
	t.Helper()
	s, err := scenario.Resolve(name)
	if err != nil {
		t.Fatal(err)
	}
	return passed(t, s)
}

// runJudged runs s with its history in memory and judges it, as the CLI
// does with a file.
func runJudged(t *testing.T, ctx context.Context, s *scenario.Scenario) (*judged, error) {
	t.Helper()
	var buf bytes.Buffer
	res, err := Run(ctx, s, Options{History: &buf})
	if res == nil {
		return nil, err
	}
	hist := bytes.Clone(buf.Bytes())
	run, jerr := check.Judge(s.Plan(), res.Meta, history.Scan(&buf), res.Audits)
	if jerr != nil {
		t.Fatal(jerr)
	}
	return &judged{Result: res, Run: run, History: hist}, err
}

func parse(t *testing.T, yaml string) *scenario.Scenario {
	t.Helper()
	s, err := scenario.Parse(t.Name()+".yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// applyOnce and applyAgain: every intent's effect shows once, or the
// redelivered ones show twice; none is lost.
func applyOnce(c map[string]int) bool  { return c["duplicates"] == 0 && c["lost"] == 0 }
func applyAgain(c map[string]int) bool { return c["duplicates"] > 0 && c["lost"] == 0 }

// TestBuiltins runs every built-in scenario end to end on the embedded
// broker, with fewer messages, and checks the signs the README promises.
func TestBuiltins(t *testing.T) {
	t.Parallel()
	turns := newTurns(t, builtinsAtOnce) // mostly waiting, as in TestEveryEmbeddedBuiltinMeetsItsExpectations
	defer turns.wait()
	for _, tc := range []struct {
		name string
		want map[string]func(c map[string]int) bool
	}{
		{"quickstart", map[string]func(map[string]int) bool{
			"none":              func(c map[string]int) bool { return c["duplicates"] > 0 && c["lost"] == 0 },
			"dedup-table":       func(c map[string]int) bool { return c["duplicates"] == 0 && c["lost"] == 0 },
			"dedup-table-split": func(c map[string]int) bool { return c["lost"] > 0 },
		}},
		{"delivery-guarantees", map[string]func(map[string]int) bool{
			"at-most-once":     func(c map[string]int) bool { return c["duplicates"] == 0 && c["lost"] > 0 },
			"at-least-once":    func(c map[string]int) bool { return c["duplicates"] > 0 && c["lost"] == 0 },
			"effectively-once": func(c map[string]int) bool { return c["duplicates"] == 0 && c["lost"] == 0 },
		}},
		{"kafka-idempotent-producer", map[string]func(map[string]int) bool{
			"idempotence-off": func(c map[string]int) bool { return c["duplicates"] > 0 && c["lost"] == 0 },
			"idempotence-on":  func(c map[string]int) bool { return c["duplicates"] == 0 && c["lost"] == 0 },
		}},
		// window: 1: each crash leaves exactly one intent stored and
		// unconfirmed, which the new client stores again.
		{"kafka-producer-restart", map[string]func(map[string]int) bool{
			"idempotence-off": func(c map[string]int) bool {
				return c["faults_injected"] > 0 && c["duplicates"] == c["faults_injected"] && c["lost"] == 0
			},
			"idempotent": func(c map[string]int) bool {
				return c["faults_injected"] > 0 && c["duplicates"] == c["faults_injected"] && c["lost"] == 0
			},
			"transactional": func(c map[string]int) bool {
				return c["faults_injected"] > 0 && c["duplicates"] == 0 && c["redelivered"] == 0 && c["lost"] == 0
			},
			"transactional-read-uncommitted": func(c map[string]int) bool {
				return c["faults_injected"] > 0 && c["duplicates"] == c["faults_injected"] && c["lost"] == 0
			},
		}},
		{"kafka-transactions", map[string]func(map[string]int) bool{
			"non-transactional":              func(c map[string]int) bool { return c["duplicates"] > 0 && c["lost"] == 0 && c["aborted_seen"] == 0 },
			"transactional-read-committed":   func(c map[string]int) bool { return c["duplicates"] == 0 && c["lost"] == 0 && c["aborted_seen"] == 0 },
			"transactional-read-uncommitted": func(c map[string]int) bool { return c["aborted_seen"] > 0 && c["lost"] == 0 },
		}},
		{"strategy-effect-kinds", map[string]func(map[string]int) bool{
			"increment":          applyAgain,
			"set":                applyOnce,
			"upsert":             applyOnce,
			"delete":             applyOnce,
			"append":             applyAgain,
			"call":               applyAgain,
			"call-with-key":      applyOnce,
			"balance-check":      applyAgain,
			"append-dedup-table": applyOnce,
		}},
	} {
		turns.run(tc.name, func(t *testing.T) {
			s, err := scenario.Resolve(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			s.Messages = 600
			s.Deadline = scenario.Duration(10 * time.Minute) // the race detector and a busy machine slow runs down
			res, err := runJudged(t, context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Run.Passed || !res.Run.Valid() {
				t.Errorf("run did not pass: %+v", res.Run)
			}
			for _, v := range res.Run.Variants {
				c := map[string]int{}
				for _, name := range check.CountNames() {
					c[name], _ = v.Counts.Get(name)
				}
				if ok := tc.want[v.Name]; ok == nil || !ok(c) {
					t.Errorf("variant %s: unexpected counts %v", v.Name, c)
				}
				if v.Attempted != 600 || v.Acknowledged != 600 || v.Delivered != 600 {
					t.Errorf("variant %s: every intent should be published, acked and delivered: %v", v.Name, c)
				}
			}
		})
	}
}

// TestAtMostOnce: acking before processing and crashing before processing
// loses exactly the crashed intents, and duplicates none.
func TestAtMostOnce(t *testing.T) {
	s := parse(t, `
version: 1
name: at-most-once
messages: 400
broker: {kind: kafka}
consumer: {ack: before-process}
faults:
  - {type: consumer-crash, at: before-process, every: 20}
variants:
  - {name: none, strategy: none}
`)
	res, err := runJudged(t, context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	v := res.Run.Variants[0]
	if v.Lost != 20 || v.Duplicates != 0 || v.FaultsInjected != 20 {
		t.Errorf("want 20 lost, 0 duplicates, 20 faults; got %+v", v.Counts)
	}
}

// TestAcksNoneLosesToALeaderMove: a fire-and-forget producer (acks=0) never
// hears that it sent to an old leader; what never took effect is counted
// lost, all of it with cause unconfirmed (how much is timing), and the
// acks=all producer loses nothing.
func TestAcksNoneLosesToALeaderMove(t *testing.T) {
	s := parse(t, `
version: 1
name: acks-none
messages: 600
broker: {kind: kafka, brokers: 3, partitions: 2}
faults:
  - {type: leader-move, every: 150}
variants:
  - {name: acks-none, strategy: none, producer: {idempotent: false, acks: none}}
  - {name: acks-all, strategy: none, producer: {idempotent: false, acks: all}}
`)
	res, err := runJudged(t, context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range res.Run.Variants {
		never := v.Attempted - v.Effects + v.Duplicates // intents that never took effect (no duplicates here)
		switch v.Name {
		case "acks-none":
			// How much is lost is timing (a loaded machine, the race
			// detector: the producer may finish between moves, and then
			// nothing is); whatever is lost is counted, all unconfirmed.
			if v.Lost != never || v.LostByCause["unconfirmed"] != v.Lost || v.Indeterminate != v.Attempted {
				t.Errorf("acks-none: lost %d (by cause %v), %d never took effect; counts %+v", v.Lost, v.LostByCause, never, v.Counts)
			}
		case "acks-all":
			if v.Lost != 0 || never != 0 || len(v.LostByCause) != 0 {
				t.Errorf("acks-all: lost %d (by cause %v); counts %+v", v.Lost, v.LostByCause, v.Counts)
			}
		}
	}
}

// TestSameSeedSameCounts: the fault schedule depends on the seed alone.
func TestSameSeedSameCounts(t *testing.T) {
	yaml := `
version: 1
name: seeded
seed: 7
messages: 500
broker: {kind: kafka}
faults:
  - {type: consumer-crash, at: after-effect-before-ack, probability: 0.05}
variants:
  - {name: none, strategy: none}
  - {name: dedup, strategy: dedup-table}
`
	var counts [2][]any
	for i := range counts {
		res, err := runJudged(t, context.Background(), parse(t, yaml))
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range res.Run.Variants {
			counts[i] = append(counts[i], v.Counts)
		}
	}
	if counts[0][0] != counts[1][0] || counts[0][1] != counts[1][1] {
		t.Errorf("same seed, different counts:\n%+v\n%+v", counts[0], counts[1])
	}
}

// TestDeadline: a run that cannot finish in time ends with ErrDeadline.
func TestDeadline(t *testing.T) {
	s := parse(t, `
version: 1
name: slow
messages: 100000
deadline: 300ms
drain: 100ms
broker: {kind: kafka}
variants:
  - {name: none, strategy: none}
`)
	_, err := runJudged(t, context.Background(), s)
	if !errors.Is(err, ErrDeadline) {
		t.Fatalf("want ErrDeadline, got %v", err)
	}
}

// TestUnreachable: an external broker that is not there is reported as such.
func TestUnreachable(t *testing.T) {
	s := parse(t, `
version: 1
name: unreachable
broker: {kind: kafka, mode: external, addresses: ["127.0.0.1:1"]}
variants:
  - {name: none, strategy: none}
`)
	_, err := runJudged(t, context.Background(), s)
	if !errors.Is(err, brokers.ErrUnreachable) {
		t.Fatalf("want ErrUnreachable, got %v", err)
	}
}

// TestExternalMode runs against a broker dqbench did not start (a kfake
// cluster standing in for a real Kafka) and checks that the run cleans up
// its topics and groups afterwards.
func TestExternalMode(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := parse(t, fmt.Sprintf(`
version: 1
name: external
messages: 300
broker: {kind: kafka, mode: external, addresses: [%q]}
faults:
  - {type: consumer-crash, at: after-effect-before-ack, every: 30}
variants:
  - {name: none, strategy: none, expect: {duplicates: 10, lost: 0}}
  - {name: dedup, strategy: dedup-table, expect: {duplicates: 0, lost: 0}}
`, c.ListenAddrs()[0]))
	res, err := runJudged(t, context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Run.Passed {
		t.Errorf("external run did not pass: %+v", res.Run.Variants)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	topics, err := kadm.NewClient(cl).ListTopics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range topics.Names() {
		if strings.HasPrefix(name, "dqbench-") {
			t.Errorf("topic %s left behind on the external broker", name)
		}
	}
}

// TestBrokerStopsAnswering: an external broker that goes away mid-run ends
// the run at its deadline with a message that says so, and the run still
// returns what it recorded.
func TestBrokerStopsAnswering(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	s := parse(t, fmt.Sprintf(`
version: 1
name: gone
messages: 2000000
deadline: 4s
drain: 1s
broker: {kind: kafka, mode: external, addresses: [%q]}
variants:
  - {name: none, strategy: none}
`, c.ListenAddrs()[0]))
	go func() {
		time.Sleep(700 * time.Millisecond)
		c.Close()
	}()
	res, err := runJudged(t, context.Background(), s)
	if !errors.Is(err, ErrDeadline) {
		t.Fatalf("err = %v, want ErrDeadline", err)
	}
	if !strings.Contains(err.Error(), "the broker stopped answering") {
		t.Errorf("err = %v, want it to say the broker stopped answering", err)
	}
	if res == nil || res.Meta.Incomplete == "" || res.Run.Valid() {
		t.Fatalf("want an incomplete, judged result; got %+v", res)
	}
}

// TestInterrupted: a cancelled run returns what it recorded, marked
// incomplete, with ErrInterrupted.
func TestInterrupted(t *testing.T) {
	s := parse(t, `
version: 1
name: interrupted
messages: 2000000
broker: {kind: kafka}
variants:
  - {name: none, strategy: none}
`)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(500 * time.Millisecond)
		cancel()
	}()
	res, err := runJudged(t, ctx, s)
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("err = %v, want ErrInterrupted", err)
	}
	if res == nil || res.Run.Variants[0].Attempted == 0 || res.Run.Passed {
		t.Fatalf("want a judged, failed result with what was published; got %+v", res)
	}
}

// TestZombieEndsItsInstance: an instance that stalls past its lease after
// its effect (consumer-zombie at after-effect-before-ack) finishes without
// acking and ends; its replacement is the only new instance. So the history
// has one crash per fault, each a lost lease, and one start per instance
// plus one per fault; and each zombie's intent applies twice with strategy
// none.
func TestZombieEndsItsInstance(t *testing.T) {
	s := parse(t, `
version: 1
name: zombie-after-effect
messages: 400
broker: {kind: kafka, partitions: 4}
consumer: {instances: 2}
faults:
  - {type: consumer-zombie, at: after-effect-before-ack, every: 100}
variants:
  - {name: none, strategy: none}
`)
	res, err := runJudged(t, context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	v := res.Run.Variants[0]
	// Each zombie's intent applies twice, and nothing else: the
	// rebalances that hand partitions from one member to another (the
	// zombie's leave, its replacement's join) move them committed, so the
	// other instance's records do not come again.
	if v.FaultsInjected != 4 || v.Duplicates != 4 || v.Lost != 0 {
		t.Errorf("want 4 faults, 4 duplicates, 0 lost; got %+v", v.Counts)
	}
	starts, crashes := 0, 0
	for e, err := range history.Scan(bytes.NewReader(res.History)) {
		if err != nil {
			t.Fatal(err)
		}
		switch e.Type {
		case history.Start:
			starts++
		case history.Crash:
			crashes++
			if !strings.HasPrefix(e.Reason, history.LeaseLost) {
				t.Errorf("crash of instance %d: %q, want only lost leases", e.Consumer, e.Reason)
			}
		}
	}
	if starts != 2+4 || crashes != 4 {
		t.Errorf("%d instances started and %d crashed, want 6 and 4", starts, crashes)
	}
	// The recorder says so in the typed field, not only in the reason.
	if n := bytes.Count(res.History, []byte(`"lease_lost":true`)); n != 4 {
		t.Errorf("%d crash events record lease_lost, want 4", n)
	}
}

// TestFailOnceRetriedInProcess: on Kafka a failed processing is retried in
// the consumer (the default where the broker takes nothing back), with no
// redelivery. A failure after the effect applies it again with none
// (times: 2, so three times in all); dedup-table-split failing between its
// dedup row and the effect skips the retry on the same delivery, which is
// a loss by the skip (cause skipped), not an id shared with another intent.
func TestFailOnceRetriedInProcess(t *testing.T) {
	s := parse(t, `
version: 1
name: fail-once
messages: 200
broker: {kind: kafka}
faults:
  - {type: fail-once, at: after-effect-before-ack, times: 2, every: 50}
  - {type: fail-once, at: between-dedup-and-effect, every: 50}
variants:
  - {name: none, strategy: none}
  - {name: split, strategy: dedup-table-split}
`)
	res, err := runJudged(t, context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	none, split := res.Run.Variants[0], res.Run.Variants[1]
	if none.Duplicates != 4 || none.Effects != 208 || none.Redelivered != 0 || none.FaultsInjected != 8 {
		t.Errorf("none: want 4 duplicates, 208 effects, 0 redelivered, 8 faults; got %+v", none.Counts)
	}
	if split.Lost != 4 || split.LostByCause[string(check.LostSkipped)] != 4 || split.Duplicates != 0 {
		t.Errorf("split: want 4 lost (skipped), 0 duplicates; got %+v, lost by %v", split.Counts, split.LostByCause)
	}
}
