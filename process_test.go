package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"go/parser"
	"go/token"
	"net"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dqbench/dqbench/brokers/kafka/cluster"
	"github.com/dqbench/dqbench/cmd"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/internal/testenv"
)

// The acceptance of process variants: the examples in examples/consumers
// run as real processes, really killed, and nothing is left afterwards.

// dqbench runs the CLI in-process.
func dqbench(ctx context.Context, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = cmd.Execute(ctx, args, cmd.Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

type processReport struct {
	Runs []struct {
		Variants []struct {
			Name           string `json:"name"`
			Duplicates     int    `json:"duplicates"`
			Lost           int    `json:"lost"`
			FaultsInjected int    `json:"faults_injected"`
			KilledPIDs     []int  `json:"killed_pids"`
		} `json:"variants"`
	} `json:"runs"`
}

// startedPIDs reads the consumer processes a saved run started.
func startedPIDs(t *testing.T, out string) []int {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(out, "*", "history.jsonl"))
	if len(files) == 0 {
		files, _ = filepath.Glob(filepath.Join(out, "history.jsonl"))
	}
	if len(files) != 1 {
		t.Fatalf("want one history.jsonl under %s, got %v", out, files)
	}
	f, err := os.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var pids []int
	for e, err := range history.Scan(f) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Type == history.Start && e.PID != 0 {
			pids = append(pids, e.PID)
		}
	}
	return pids
}

// noneLeft fails if any of pids is still running.
func noneLeft(t *testing.T, pids []int) {
	t.Helper()
	if len(pids) == 0 {
		t.Fatal("the run started no consumer process")
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("consumer process %d is still there after the run (kill 0: %v)", pid, err)
		}
	}
}

// writeScenario writes a one-variant process scenario on the embedded
// Kafka running command.
func writeScenario(t *testing.T, command, query string) string {
	return writeScenarioOn(t, "{kind: kafka}", "commit", command, query)
}

// writeScenarioOn writes a one-variant process scenario on broker, killing
// at kill (the broker's commit or ack point), running command.
func writeScenarioOn(t *testing.T, broker, kill, command, query string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.yaml")
	c, _ := json.Marshal(strings.Fields(command))
	q, _ := json.Marshal(query)
	src := `version: 1
name: process-test
messages: 60
broker: ` + broker + `
faults:
  - {type: consumer-kill, at: ` + kill + `, every: 20}
variants:
  - name: mine
    process: {command: ` + string(c) + `, ready: 5s}
    audit: {query: ` + string(q) + `}
`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestProcess runs the example consumers (built once) as process
// variants: the example's faults and counts, the same counts with the same
// seed, a consumer that exits at once, an audit query with a typo, and an
// interrupted run; after each, none of the processes it started is left.
func TestProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("process variants need Linux (/proc)")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command to build the example consumers")
	}
	dir := t.TempDir()
	naive, correct := filepath.Join(dir, "naive"), filepath.Join(dir, "correct")
	if out, err := exec.Command("go", "build", "-o", dir+"/", "./examples/consumers/naive", "./examples/consumers/correct").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	const query = "SELECT message_id, COUNT(*) FROM payments GROUP BY message_id"

	t.Run("example", func(t *testing.T) {
		sameCounts(t, exampleWith(t, "examples/consumers/scenario.yaml", map[string]string{"./naive": naive, "./correct": correct}), "--messages", "100", "--seed", "3")
	})

	// The same consumers on a real Kafka dqbench starts, their fetches and
	// commits watched through its relays: the same counts as on the
	// embedded broker.
	t.Run("example-real-kafka", func(t *testing.T) {
		if testing.Short() || raceEnabled {
			t.Skip("a JVM: not with -short or -race")
		}
		if _, err := cluster.FindInstall(); err != nil {
			testenv.Unavailable(t, "%v", err)
		}
		sameCountsOn(t, exampleWith(t, "examples/consumers/scenario.yaml", map[string]string{"./naive": naive, "./correct": correct}),
			[]string{"--messages", "100", "--seed", "3"}, []string{"--broker-mode", "managed"})
	})

	t.Run("exits-at-once", func(t *testing.T) {
		code, stdout, stderr := dqbench(context.Background(), "run", writeScenario(t, "false", "SELECT 1, 1"))
		if code != 3 || !strings.Contains(stdout+stderr, `instance 1 (["false"], pid`) || !strings.Contains(stdout+stderr, "exited with status 1") ||
			!strings.Contains(stdout+stderr, "within its ready period (5s)") {
			t.Errorf("exit %d\n%s\n%s", code, stdout, stderr)
		}
	})

	t.Run("audit-typo", func(t *testing.T) {
		typo := strings.Replace(query, "payments", "paymnts", 1)
		code, stdout, stderr := dqbench(context.Background(), "run", writeScenario(t, naive, typo))
		if code != 3 || !strings.Contains(stdout+stderr, `audit query "`+typo+`"`) || !strings.Contains(stdout+stderr, "no such table: paymnts") {
			t.Errorf("exit %d\n%s\n%s", code, stdout, stderr)
		}
	})

	t.Run("interrupted", func(t *testing.T) {
		out := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// Cancel (what Ctrl-C does) once a consumer process runs.
		go func() {
			for ctx.Err() == nil && !running(naive) {
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(300 * time.Millisecond)
			cancel()
		}()
		code, stdout, stderr := dqbench(ctx, "run", writeScenario(t, naive, query), "--messages", "5000", "--out", out)
		if code != 3 {
			t.Errorf("exit %d, want 3\n%s\n%s", code, stdout, stderr)
		}
		noneLeft(t, startedPIDs(t, out))
	})
}

// exampleWith writes a copy of the example scenario at path whose
// build: ./PKG consumers are the programs built from them.
func exampleWith(t *testing.T, path string, programs map[string]string) string {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for pkg, prog := range programs {
		src = regexp.MustCompile(`build: `+regexp.QuoteMeta(pkg)+`\b`).ReplaceAll(src, []byte(`command: ["`+prog+`"]`))
	}
	out := filepath.Join(t.TempDir(), filepath.Base(path))
	if err := os.WriteFile(out, src, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// sameCounts runs the example scenario at path twice with args: every
// variant meets faults and kills, the naive one duplicates, the correct
// one neither duplicates nor loses, and both runs count the same
// duplicates and lost; no process is left after either.
func sameCounts(t *testing.T, path string, args ...string) {
	t.Helper()
	sameCountsOn(t, path, args, nil)
}

// sameCountsOn is sameCounts with second added to the second run's
// arguments (another broker mode).
func sameCountsOn(t *testing.T, path string, args, second []string) {
	t.Helper()
	var runs [2]processReport
	for i := range runs {
		out := t.TempDir()
		all := append([]string{"run", path, "-o", "json", "--out", out}, args...)
		if i == 1 {
			all = append(all, second...)
		}
		code, stdout, stderr := dqbench(context.Background(), all...)
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
		}
		if err := json.Unmarshal([]byte(stdout), &runs[i]); err != nil {
			t.Fatal(err)
		}
		noneLeft(t, startedPIDs(t, out))
	}
	for i, r := range runs {
		for _, v := range r.Runs[0].Variants {
			if v.FaultsInjected == 0 || len(v.KilledPIDs) == 0 {
				t.Errorf("run %d, %s: %d faults, killed pids %v", i, v.Name, v.FaultsInjected, v.KilledPIDs)
			}
			if v.Name == "naive" && v.Duplicates == 0 || v.Name == "correct" && v.Duplicates != 0 || v.Lost != 0 {
				t.Errorf("run %d, %s: %d duplicates, %d lost", i, v.Name, v.Duplicates, v.Lost)
			}
		}
	}
	for j, v := range runs[0].Runs[0].Variants {
		if w := runs[1].Runs[0].Variants[j]; v.Duplicates != w.Duplicates || v.Lost != w.Lost {
			t.Errorf("%s: the same seed gave %d/%d and %d/%d duplicates/lost", v.Name, v.Duplicates, v.Lost, w.Duplicates, w.Lost)
		}
	}
}

// running reports whether a process runs program.
func running(program string) bool {
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range dirs {
		if b, err := os.ReadFile(f); err == nil && bytes.HasPrefix(b, []byte(program+"\x00")) {
			return true
		}
	}
	return false
}

// TestProcessRabbitMQ runs the RabbitMQ example consumers as process
// variants against the RabbitMQ at DQBENCH_RABBITMQ_URL (default the local
// one): the example's faults and counts, twice, on the default and on an
// --addresses broker; a consumer that exits at once; an audit query with a
// typo; an interrupted run. None of the processes is left after each.
func TestProcessRabbitMQ(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("process variants need Linux (/proc)")
	}
	url := os.Getenv("DQBENCH_RABBITMQ_URL")
	if url == "" {
		url = "amqp://guest:guest@127.0.0.1:5672/"
	}
	host := url
	if u, err := neturl.Parse(url); err == nil {
		host = u.Host
	}
	if c, err := net.DialTimeout("tcp", host, 2*time.Second); err != nil {
		if os.Getenv("DQBENCH_REQUIRE_BROKERS") == "1" {
			t.Fatalf("DQBENCH_REQUIRE_BROKERS=1 but no RabbitMQ at %s: %v", url, err)
		}
		t.Skipf("no RabbitMQ at %s (%v); set DQBENCH_RABBITMQ_URL or start one (docker compose up -d rabbitmq)", url, err)
	} else {
		c.Close()
	}
	naive, correct := buildExamples(t, "rabbitmq-naive", "rabbitmq-correct")
	t.Run("example", func(t *testing.T) {
		sameCounts(t, exampleWith(t, "examples/consumers/rabbitmq.yaml", map[string]string{"./rabbitmq-naive": naive, "./rabbitmq-correct": correct}), "--messages", "120", "--addresses", url)
	})
	processFailures(t, "{kind: rabbitmq, addresses: ["+strconv.Quote(url)+"]}", naive)
}

// TestProcessMQTT runs the MQTT example consumers as process variants on
// the embedded broker, as TestProcessRabbitMQ does.
func TestProcessMQTT(t *testing.T) {
	testenv.SkipShort(t, "Mosquitto or the example consumers")
	if runtime.GOOS != "linux" {
		t.Skip("process variants need Linux (/proc)")
	}
	naive, correct := buildExamples(t, "mqtt-naive", "mqtt-correct")
	t.Run("example", func(t *testing.T) {
		sameCounts(t, exampleWith(t, "examples/consumers/mqtt.yaml", map[string]string{"./mqtt-naive": naive, "./mqtt-correct": correct}), "--messages", "120")
	})
	processFailures(t, "{kind: mqtt}", naive)
}

// TestProcessNATS runs the NATS example consumers as process variants on
// the embedded nats-server, as TestProcessMQTT does; with its own TMPDIR,
// in which no run leaves a directory (the server's JetStream store, the
// run's stores).
func TestProcessNATS(t *testing.T) {
	testenv.SkipShort(t, "nats-server and the example consumers")
	if runtime.GOOS != "linux" {
		t.Skip("process variants need Linux (/proc)")
	}
	tmp, err := os.MkdirTemp("", "process-nats-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	t.Setenv("TMPDIR", tmp)
	naive, correct := buildExamples(t, "nats-naive", "nats-correct")
	t.Run("example", func(t *testing.T) {
		sameCounts(t, exampleWith(t, "examples/consumers/nats.yaml", map[string]string{"./nats-naive": naive, "./nats-correct": correct}), "--messages", "120")
	})
	processFailures(t, "{kind: nats, ack_wait: 2s}", naive)
	// The leftover ledger's directory stays; a finished run's ledger goes.
	left, _ := filepath.Glob(filepath.Join(tmp, "dqbench*"))
	ledgers, _ := filepath.Glob(filepath.Join(tmp, "dqbench-ledger-*", "*"))
	left = append(slices.DeleteFunc(left, func(p string) bool { return strings.HasPrefix(filepath.Base(p), "dqbench-ledger-") }), ledgers...)
	if len(left) > 0 {
		t.Errorf("the runs left %v", left)
	}
}

// buildExamples builds the example consumers in examples/consumers/NAME.
func buildExamples(t *testing.T, names ...string) (naive, correct string) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command to build the example consumers")
	}
	dir := t.TempDir()
	args := []string{"build", "-o", dir + "/"}
	for _, n := range names {
		args = append(args, "./examples/consumers/"+n)
	}
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return filepath.Join(dir, names[0]), filepath.Join(dir, names[1])
}

// processFailures checks, on broker, that a consumer that exits during its
// ready period and an audit query with a typo end the run with exit code 3
// naming them and a report (INCOMPLETE), and that an interrupted run (what
// Ctrl-C does) exits 3 and leaves no process.
func processFailures(t *testing.T, broker, naive string) {
	t.Helper()
	const query = "SELECT message_id, COUNT(*) FROM payments GROUP BY message_id"
	t.Run("exits-at-once", func(t *testing.T) {
		code, stdout, stderr := dqbench(context.Background(), "run", writeScenarioOn(t, broker, "ack", "false", query))
		if code != 3 || !strings.Contains(stdout+stderr, `instance 1 (["false"], pid`) || !strings.Contains(stdout+stderr, "exited with status 1") ||
			!strings.Contains(stdout+stderr, "within its ready period (5s)") || !strings.Contains(stdout, "INCOMPLETE") {
			t.Errorf("exit %d\n%s\n%s", code, stdout, stderr)
		}
	})

	t.Run("audit-typo", func(t *testing.T) {
		typo := strings.Replace(query, "payments", "paymnts", 1)
		code, stdout, stderr := dqbench(context.Background(), "run", writeScenarioOn(t, broker, "ack", naive, typo))
		if code != 3 || !strings.Contains(stdout+stderr, `audit query "`+typo+`"`) || !strings.Contains(stdout+stderr, "no such table: paymnts") || !strings.Contains(stdout, "INCOMPLETE") {
			t.Errorf("exit %d\n%s\n%s", code, stdout, stderr)
		}
	})

	t.Run("interrupted", func(t *testing.T) {
		out := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			for ctx.Err() == nil && !running(naive) {
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(300 * time.Millisecond)
			cancel()
		}()
		code, stdout, stderr := dqbench(ctx, "run", writeScenarioOn(t, broker, "ack", naive, query), "--messages", "5000", "--out", out)
		if code != 3 {
			t.Errorf("exit %d, want 3\n%s\n%s", code, stdout, stderr)
		}
		noneLeft(t, startedPIDs(t, out))
	})
}

// TestExampleConsumersStandAlone: each example consumer is one file that
// imports nothing of dqbench's, so that a user can copy it into a
// repository of their own.
func TestExampleConsumersStandAlone(t *testing.T) {
	entries, err := os.ReadDir("examples/consumers")
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, filepath.Join("examples/consumers", e.Name()))
		}
	}
	if err != nil || len(dirs) != 8 {
		t.Fatalf("examples/consumers has %d directories (%v); want the 8 example consumers", len(dirs), err)
	}
	for _, dir := range dirs {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		if len(files) != 1 {
			t.Errorf("%s: %d Go files, want one (copy one file)", dir, len(files))
		}
		for _, f := range files {
			parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range parsed.Imports {
				if strings.Contains(imp.Path.Value, "github.com/dqbench/dqbench") {
					t.Errorf("%s imports %s: a user's copy could not build", f, imp.Path.Value)
				}
			}
		}
	}
}
