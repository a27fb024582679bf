package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/check/checktest"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/runner"
	"github.com/dqbench/dqbench/scenario"
)

// cliYAML passes with the fake history: intent 2 is applied twice.
const cliYAML = `version: 1
name: cli
seed: 5
messages: 3
deadline: 30s
broker:
  kind: kafka
variants:
  - name: none
    strategy: none
    expect:
      duplicates: ">0"
`

// failingYAML expects what the fake history breaks.
const failingYAML = `version: 1
name: failing
broker:
  kind: kafka
variants:
  - name: none
    strategy: none
    expect:
      duplicates: 0
`

// call is what the fake runner was given.
type call struct {
	s    *scenario.Scenario
	opts runner.Options
}

// fakeRunner stands in for runner.Run: it records its calls, writes a
// history in which intents 1..3 of every variant are published, confirmed
// and delivered, intent 2 twice, and returns audits in which intent 2
// applied twice. err, when set, is returned with the result (res) or
// without (nil result).
type fakeRunner struct {
	mu    sync.Mutex
	calls []call

	err     error
	partial bool // return the result with err, as runner.Run does for a deadline
	// notStarted returns a result with Meta.Error and err, as runner.Run
	// does for a broker it cannot reach.
	notStarted bool
}

func (f *fakeRunner) run(_ context.Context, s *scenario.Scenario, opts runner.Options) (*runner.Result, error) {
	f.mu.Lock()
	f.calls = append(f.calls, call{s: s, opts: opts})
	f.mu.Unlock()
	if f.err != nil && f.notStarted {
		return &runner.Result{Meta: check.Meta{Scenario: s.Name, Seed: s.Seed, Messages: s.Messages, Broker: "fake", Error: f.err.Error()}}, f.err
	}
	if f.err != nil && !f.partial {
		return nil, f.err
	}
	var events []history.Event
	audits := map[string]history.Audit{}
	for _, v := range s.Variants {
		for i := 1; i <= 3; i++ {
			events = append(events,
				history.Event{Variant: v.Name, Type: history.Publish, Intent: i, Attempt: 1},
				history.Event{Variant: v.Name, Type: history.Confirm, Intent: i, Attempt: 1},
				history.Event{Variant: v.Name, Type: history.Deliver, Intent: i, Attempt: 1, Consumer: 1, Position: fmt.Sprintf("0@%d", i)},
			)
		}
		events = append(events,
			history.Event{Variant: v.Name, Type: history.Deliver, Intent: 2, Attempt: 2, Consumer: 2, Position: "0@2", Redelivered: true},
			history.Event{Variant: v.Name, Type: history.Drain, Drained: true},
		)
		audits[v.Name] = history.Audit{Applied: map[int]int{1: 1, 2: 2, 3: 1}}
	}
	if opts.History == nil {
		return nil, fmt.Errorf("%w: no history writer", runner.ErrInternal)
	}
	if err := history.Write(opts.History, events); err != nil {
		return nil, err
	}
	res := &runner.Result{
		Meta: check.Meta{
			Scenario: s.Name, Seed: s.Seed, Messages: s.Messages,
			Broker: "fake", Duration: 1234 * time.Millisecond,
		},
		Audits: audits,
	}
	if f.err != nil {
		res.Meta.Incomplete = f.err.Error()
	}
	return res, f.err
}

type result struct {
	code     int
	out, err string
	fake     *fakeRunner
}

func run(t *testing.T, fake *fakeRunner, args ...string) result {
	t.Helper()
	if fake == nil {
		fake = &fakeRunner{}
	}
	var out, errOut bytes.Buffer
	code := execute(t.Context(), args, Streams{In: strings.NewReader(""), Out: &out, Err: &errOut}, fake.run)
	return result{code: code, out: out.String(), err: errOut.String(), fake: fake}
}

// scenarioFiles writes the test scenarios to a temporary directory.
func scenarioFiles(t *testing.T) (cli, failing string) {
	t.Helper()
	dir := t.TempDir()
	cli, failing = filepath.Join(dir, "cli.yaml"), filepath.Join(dir, "failing.yaml")
	for path, text := range map[string]string{cli: cliYAML, failing: failingYAML} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return cli, failing
}

func (r result) only(t *testing.T) call {
	t.Helper()
	if len(r.fake.calls) != 1 {
		t.Fatalf("the runner was called %d times, want once (stderr: %s)", len(r.fake.calls), r.err)
	}
	return r.fake.calls[0]
}

func TestRunFlags(t *testing.T) {
	cli, failing := scenarioFiles(t)
	for _, tc := range []struct {
		name string
		args []string
		fake *fakeRunner
		code int
		test func(t *testing.T, r result)
	}{
		{name: "scenario seed", args: []string{"run", cli}, test: func(t *testing.T, r result) {
			if c := r.only(t); c.s.Seed != 5 || c.s.Messages != 3 || c.s.Deadline.D() != 30*time.Second {
				t.Errorf("seed %d messages %d deadline %s, want the scenario's 5, 3, 30s", c.s.Seed, c.s.Messages, c.s.Deadline)
			}
		}},
		{name: "--seed 7", args: []string{"run", cli, "--seed", "7"}, test: func(t *testing.T, r result) {
			if c := r.only(t); c.s.Seed != 7 {
				t.Errorf("seed %d, want 7", c.s.Seed)
			}
		}},
		{name: "--seed 0", args: []string{"run", cli, "--seed", "0"}, test: func(t *testing.T, r result) {
			if c := r.only(t); c.s.Seed != 0 {
				t.Errorf("seed %d, want 0: an explicit --seed 0 overrides the scenario's 5", c.s.Seed)
			}
		}},
		{name: "--messages 50", args: []string{"run", cli, "--messages", "50"}, test: func(t *testing.T, r result) {
			if c := r.only(t); c.s.Messages != 50 {
				t.Errorf("messages %d, want 50", c.s.Messages)
			}
		}},
		{name: "--addresses", args: []string{"run", cli, "--addresses", "127.0.0.1:9092,127.0.0.1:9093"}, test: func(t *testing.T, r result) {
			if c := r.only(t); c.s.Broker.Mode != catalog.External || strings.Join(c.s.Broker.Addresses, ",") != "127.0.0.1:9092,127.0.0.1:9093" {
				t.Errorf("broker %+v, want external at the two addresses", c.s.Broker)
			}
		}},
		{name: "--addresses not host:port", args: []string{"run", cli, "--addresses", "nohostport"}, code: ExitUsage, test: func(t *testing.T, r result) {
			if len(r.fake.calls) != 0 || !strings.Contains(r.err, "--addresses: nohostport: not host:port") {
				t.Errorf("calls %d, stderr %s", len(r.fake.calls), r.err)
			}
		}},
		{name: "--addresses with a fault only an embedded broker has", args: []string{"run", "mqtt-subscriber-offline", "--addresses", "tcp://127.0.0.1:1883"}, code: ExitUsage, test: func(t *testing.T, r result) {
			if len(r.fake.calls) != 0 || !strings.Contains(r.err, "fault subscriber-offline cannot act on an external broker") {
				t.Errorf("calls %d, stderr %s", len(r.fake.calls), r.err)
			}
		}},
		{name: "--timeout 90s", args: []string{"run", cli, "--timeout", "90s"}, test: func(t *testing.T, r result) {
			if c := r.only(t); c.s.Deadline.D() != 90*time.Second {
				t.Errorf("deadline %s, want 90s", c.s.Deadline)
			}
		}},
		{name: "options", args: []string{"run", cli}, test: func(t *testing.T, r result) {
			if c := r.only(t); c.opts.History == nil || c.opts.Progress == nil {
				t.Errorf("options %+v, want a history writer and a progress counter", c.opts)
			}
			if !strings.Contains(r.out, "scenario cli") || !strings.Contains(r.out, "PASS none: duplicates > 0 (got 1)") {
				t.Errorf("table output lacks the run or its verdict:\n%s", r.out)
			}
		}},
		{name: "-o json", args: []string{"run", cli, "-o", "json", "--seed", "9"}, test: func(t *testing.T, r result) {
			var got struct {
				Passed bool `json:"passed"`
				Runs   []struct {
					Scenario string          `json:"scenario"`
					Seed     int64           `json:"seed"`
					Variants []check.Variant `json:"variants"`
				} `json:"runs"`
			}
			if err := json.Unmarshal([]byte(r.out), &got); err != nil {
				t.Fatalf("-o json output is not JSON: %v\n%s", err, r.out)
			}
			if !got.Passed || len(got.Runs) != 1 || got.Runs[0].Seed != 9 || len(got.Runs[0].Variants) != 1 {
				t.Fatalf("JSON %+v, want one passed run with seed 9 and one variant", got)
			}
			checktest.WantCounts(t, got.Runs[0].Variants[0].Counts, map[string]int{
				"attempted": 3, "acknowledged": 3, "delivered": 3, "redelivered": 1, "effects": 4, "duplicates": 1, "lost": 0,
			})
		}},
		{name: "failed expectation", args: []string{"run", failing}, code: ExitFail, test: func(t *testing.T, r result) {
			if !strings.Contains(r.out, "FAIL none: duplicates == 0 (got 1)") {
				t.Errorf("output lacks the failed expectation:\n%s", r.out)
			}
		}},
		{name: "deadline", args: []string{"run", cli},
			fake: &fakeRunner{err: fmt.Errorf("%w (30s): 2 of 3 publishes ended", runner.ErrDeadline), partial: true},
			code: ExitIncomplete, test: func(t *testing.T, r result) {
				if !strings.Contains(r.out, "INCOMPLETE cli: the run did not finish by its deadline") {
					t.Errorf("report lacks the INCOMPLETE line:\n%s", r.out)
				}
				if !strings.Contains(r.out, "scenario cli") || !strings.Contains(r.out, "\nINCOMPLETE  seed 5") {
					t.Errorf("report of the partial run is missing or its last line is not INCOMPLETE:\n%s", r.out)
				}
				if n := strings.Count(r.out+r.err, "the run did not finish by its deadline"); n != 1 {
					t.Errorf("the reason is said %d times, want once (the table):\nstdout:\n%s\nstderr:\n%s", n, r.out, r.err)
				}
			}},
		{name: "internal error", args: []string{"run", cli},
			fake: &fakeRunner{err: fmt.Errorf("variant none: %w: panic: oops", runner.ErrInternal)},
			code: ExitInternal, test: func(t *testing.T, r result) {
				if !strings.Contains(r.err, "internal error") {
					t.Errorf("stderr %q does not say internal error", r.err)
				}
			}},
		{name: "unknown -o", args: []string{"run", cli, "-o", "yaml"}, code: ExitUsage, test: func(t *testing.T, r result) {
			if len(r.fake.calls) != 0 {
				t.Error("the runner ran despite a bad -o")
			}
			if !strings.Contains(r.err, `--output "yaml" is not allowed`) {
				t.Errorf("stderr %q does not name the bad format", r.err)
			}
		}},
		{name: "negative --messages", args: []string{"run", cli, "--messages", "-1"}, code: ExitUsage},
		{name: "--messages 0", args: []string{"run", cli, "--messages", "0"}, code: ExitUsage, test: func(t *testing.T, r result) {
			if len(r.fake.calls) != 0 || !strings.Contains(r.err, "--messages 0: must be at least 1") {
				t.Errorf("runs %d, stderr %q: want no run and --messages named", len(r.fake.calls), r.err)
			}
		}},
		{name: "--timeout 0s", args: []string{"run", cli, "--timeout", "0s"}, code: ExitUsage, test: func(t *testing.T, r result) {
			if len(r.fake.calls) != 0 || !strings.Contains(r.err, "--timeout 0s: must be above 0s") {
				t.Errorf("runs %d, stderr %q: want no run and --timeout named", len(r.fake.calls), r.err)
			}
		}},
		{name: "--timeout 25h", args: []string{"run", cli, "--timeout", "25h"}, code: ExitUsage, test: func(t *testing.T, r result) {
			if len(r.fake.calls) != 0 || !strings.Contains(r.err, "at most 24h") {
				t.Errorf("runs %d, stderr %q: want no run and the 24h limit named", len(r.fake.calls), r.err)
			}
		}},
		{name: "unknown flag", args: []string{"run", cli, "--sede", "1"}, code: ExitUsage, test: func(t *testing.T, r result) {
			if !strings.Contains(r.err, `unknown flag: --sede (did you mean "--seed"?)`) {
				t.Errorf("stderr %q: want the nearest flag suggested", r.err)
			}
		}},
		{name: "unknown flag far from any", args: []string{"run", cli, "--zzzzzz"}, code: ExitUsage, test: func(t *testing.T, r result) {
			if strings.Contains(r.err, "did you mean") {
				t.Errorf("stderr %q: want no suggestion", r.err)
			}
		}},
		{name: "unknown scenario", args: []string{"run", "no-such-scenario"}, code: ExitUsage, test: func(t *testing.T, r result) {
			if len(r.fake.calls) != 0 {
				t.Error("the runner ran without a valid scenario")
			}
		}},
		{name: "one bad scenario of two runs none", args: []string{"run", cli, "no-such-scenario"}, code: ExitUsage, test: func(t *testing.T, r result) {
			if len(r.fake.calls) != 0 {
				t.Error("a scenario ran although another was invalid")
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, tc.fake, tc.args...)
			if r.code != tc.code {
				t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tc.code, r.out, r.err)
			}
			if tc.test != nil {
				tc.test(t, r)
			}
		})
	}
}

func TestRunOut(t *testing.T) {
	cli, _ := scenarioFiles(t)
	out := filepath.Join(t.TempDir(), "runs")
	runDir := filepath.Join(out, "cli")

	r := run(t, nil, "run", cli, "--out", out, "--seed", "7", "--messages", "50")
	if r.code != ExitPass {
		t.Fatalf("exit code %d, want 0\n%s", r.code, r.err)
	}
	s, err := scenario.Load(filepath.Join(runDir, "scenario.yaml"))
	if err != nil {
		t.Fatalf("saved scenario does not parse back: %v", err)
	}
	if s.Seed != 7 || s.Messages != 50 {
		t.Errorf("saved scenario has seed %d messages %d, want the overrides 7 and 50", s.Seed, s.Messages)
	}
	if !strings.Contains(r.err, "saved run to "+runDir) {
		t.Errorf("stderr %q does not say where the run was saved", r.err)
	}

	// The saved run judges again to the same counts.
	c := run(t, nil, "check", runDir, "-o", "json")
	if c.code != ExitPass || !strings.Contains(c.out, `"duplicates": 1`) {
		t.Errorf("check %s: exit %d, output:\n%s\n%s", runDir, c.code, c.out, c.err)
	}

	// The same --out again is refused, before anything runs, unless --force.
	again := run(t, nil, "run", cli, "--out", out)
	if again.code != ExitUsage {
		t.Errorf("second run into %s: exit %d, want %d", out, again.code, ExitUsage)
	}
	if !strings.Contains(again.err, "--force") {
		t.Errorf("stderr %q does not mention --force", again.err)
	}
	if len(again.fake.calls) != 0 {
		t.Error("the refused run ran anyway")
	}
	forced := run(t, nil, "run", cli, "--out", out, "--force")
	if forced.code != ExitPass {
		t.Errorf("run with --force: exit %d, want 0\n%s", forced.code, forced.err)
	}
	if s, err := scenario.Load(filepath.Join(runDir, "scenario.yaml")); err != nil || s.Seed != 5 {
		t.Errorf("after --force the saved scenario is %v (err %v), want the new run's seed 5", s, err)
	}
}

func TestRunSameScenarioTwice(t *testing.T) {
	cli, _ := scenarioFiles(t)
	out := t.TempDir()
	r := run(t, nil, "run", cli, cli, "--out", out)
	if r.code != ExitPass {
		t.Fatalf("exit code %d\n%s", r.code, r.err)
	}
	if len(r.fake.calls) != 2 {
		t.Fatalf("the runner ran %d times, want 2", len(r.fake.calls))
	}
	for _, name := range []string{"cli", "cli-2"} {
		if _, err := os.Stat(filepath.Join(out, name, "history.jsonl")); err != nil {
			t.Errorf("no run saved as %s: %v", name, err)
		}
	}
	if n := strings.Count(r.out, "scenario cli"); n != 2 {
		t.Errorf("the report shows %d runs, want 2:\n%s", n, r.out)
	}
}

// TestRunBuiltinBesideAFileOfItsName: in a folder holding quickstart and
// quickstart.yaml (whose process command would run), "run quickstart" runs
// the built-in and says which files it did not read; "run
// ./quickstart.yaml" runs the file.
func TestRunBuiltinBesideAFileOfItsName(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, f := range []string{"quickstart", "quickstart.yaml"} {
		if err := os.WriteFile(f, []byte(cliYAML), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := run(t, nil, "run", "quickstart", "--quiet")
	if got := r.only(t).s.File; got != "builtin:quickstart" {
		t.Errorf("run quickstart ran %s, want the built-in", got)
	}
	if !strings.Contains(r.err, "warning: quickstart is the built-in scenario quickstart, not the file quickstart.yaml here; to run the file, give its path: ./quickstart.yaml") {
		t.Errorf("stderr does not name the file it did not read:\n%s", r.err)
	}
	r = run(t, nil, "run", "./quickstart.yaml", "--quiet")
	if got := r.only(t).s.Name; got != "cli" {
		t.Errorf("run ./quickstart.yaml ran %s, want the file's scenario cli", got)
	}
}

func TestRunOutIsAFile(t *testing.T) {
	cli, _ := scenarioFiles(t)
	file := filepath.Join(t.TempDir(), "somefile")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, nil, "run", cli, "--out", filepath.Join(file, "sub"))
	if r.code != ExitUsage || len(r.fake.calls) != 0 {
		t.Errorf("--out under a file: exit %d after %d runs, want %d before any", r.code, len(r.fake.calls), ExitUsage)
	}
}

// TestRunOutAfterAFailedRun: a run with nothing to judge (broker
// unreachable) leaves no half-saved run behind, so the same command can be
// run again and "dqbench check" does not trip over it.
func TestRunOutAfterAFailedRun(t *testing.T) {
	cli, _ := scenarioFiles(t)
	out := t.TempDir()
	failed := run(t, &fakeRunner{err: fmt.Errorf("%w: cannot reach Kafka at 127.0.0.1:1", brokers.ErrUnreachable)}, "run", cli, "--out", out)
	if failed.code != ExitIncomplete {
		t.Fatalf("unreachable broker: exit %d, want %d\n%s", failed.code, ExitIncomplete, failed.err)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("a run with nothing to judge left %v in %s", entries, out)
	}
	if again := run(t, nil, "run", cli, "--out", out); again.code != ExitPass {
		t.Errorf("rerun after a failed run: exit %d, want 0\n%s", again.code, again.err)
	}
}

// TestReasonSaidOnce: why a run could not run or was cut short is said
// once where a person reads it: in the table, or on stderr when stdout is
// a format for machines or only the verdict line (--quiet).
func TestReasonSaidOnce(t *testing.T) {
	cli, _ := scenarioFiles(t)
	unreachable := fmt.Errorf("%w: cannot reach Kafka at 127.0.0.1:1: connection refused", brokers.ErrUnreachable)
	deadline := fmt.Errorf("%w (30s): 2 of 3 publishes ended", runner.ErrDeadline)
	for _, tc := range []struct {
		name     string
		fake     *fakeRunner
		args     []string
		reason   string
		inStderr bool
	}{
		{"unreachable, table", &fakeRunner{err: unreachable, notStarted: true}, []string{"run", cli}, "cannot reach Kafka", false},
		{"unreachable, json", &fakeRunner{err: unreachable, notStarted: true}, []string{"run", cli, "-o", "json"}, "cannot reach Kafka", true},
		{"unreachable, quiet", &fakeRunner{err: unreachable, notStarted: true}, []string{"run", cli, "--quiet"}, "cannot reach Kafka", true},
		{"deadline, table", &fakeRunner{err: deadline, partial: true}, []string{"run", cli}, "did not finish by its deadline", false},
		{"deadline, junit", &fakeRunner{err: deadline, partial: true}, []string{"run", cli, "-o", "junit"}, "did not finish by its deadline", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, tc.fake, tc.args...)
			if r.code != ExitIncomplete {
				t.Fatalf("exit %d, want %d\n%s", r.code, ExitIncomplete, r.err)
			}
			if n := strings.Count(r.err, tc.reason); n != map[bool]int{true: 1}[tc.inStderr] {
				t.Errorf("stderr says %q %d times, want %v:\n%s", tc.reason, n, tc.inStderr, r.err)
			}
			if !tc.inStderr && strings.Count(r.out, tc.reason) != 1 {
				t.Errorf("the table does not say %q once:\n%s", tc.reason, r.out)
			}
		})
	}
}
