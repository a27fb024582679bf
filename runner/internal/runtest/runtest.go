// Package runtest runs scenarios for the tests of packages beside the
// runner (runner/realkafka, runner/kafkadiff): each a test binary, and a
// go test -timeout, of its own. The runner's own tests have the same
// helpers in package runner.
package runtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/netfault"
	"github.com/dqbench/dqbench/runner"
	"github.com/dqbench/dqbench/scenario"
)

// Main runs m with the managed clusters' state directories
// (dqbench-brokers/KIND) under a directory of the tests' own, and fails
// the package on a goroutine left running.
func Main(m *testing.M) {
	state, err := os.MkdirTemp("", "dqbench-runtest-")
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

// Judged is a run and the judgement of its history.
type Judged struct {
	*runner.Result
	Run     check.Run
	History []byte // history.jsonl as written
}

// Passed runs s (Run) and stops the test unless the run passed and is
// valid.
func Passed(t *testing.T, s *scenario.Scenario) *Judged {
	t.Helper()
	res, err := Run(t, context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Run.Passed || !res.Run.Valid() {
		t.Fatalf("%s did not pass: %+v", s.Name, res.Run)
	}
	return res
}

// Run runs s with its history in memory and judges it, as the CLI does
// with a file.
func Run(t *testing.T, ctx context.Context, s *scenario.Scenario) (*Judged, error) {
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
	return &Judged{Result: res, Run: run, History: hist}, err
}

// Parse reads yaml as the scenario of test t.
func Parse(t *testing.T, yaml string) *scenario.Scenario {
	t.Helper()
	s, err := scenario.Parse(t.Name()+".yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return s
}
