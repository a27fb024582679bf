// Package realkafka_test runs the Kafka built-ins and faults on a real
// Apache Kafka that the tests start from dqbench's jar cache (mode:
// managed), and compares them with the embedded broker. A package of its
// own: a test binary, and a go test -timeout, of its own beside the
// runner's other tests, which it would otherwise double.
package realkafka_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/internal/race"
	"github.com/dqbench/dqbench/netfault"
	"github.com/dqbench/dqbench/runner"
	"github.com/dqbench/dqbench/scenario"
)

const raceEnabled = race.Enabled

func TestMain(m *testing.M) {
	// The managed clusters' state directories (dqbench-brokers/kafka)
	// under a directory of the tests' own, for the whole process.
	state, err := os.MkdirTemp("", "dqbench-realkafka-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_RUNTIME_DIR", state)
	opts := []goleak.Option{
		goleak.IgnoreTopFunction("os/signal.signal_recv"),
		goleak.Cleanup(func(code int) {
			os.RemoveAll(state)
			os.Exit(code)
		}),
	}
	for _, fn := range netfault.StuckInToxiproxy {
		opts = append(opts, goleak.IgnoreTopFunction(fn))
	}
	goleak.VerifyTestMain(m, opts...)
}

// judged is a run and the judgement of its history.
type judged struct {
	*runner.Result
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

// runJudged runs s with its history in memory and judges it, as the CLI
// does with a file.
func runJudged(t *testing.T, ctx context.Context, s *scenario.Scenario) (*judged, error) {
	t.Helper()
	var buf bytes.Buffer
	res, err := runner.Run(ctx, s, runner.Options{History: &buf})
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
