package cmd

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/internal/ansi"
	"github.com/dqbench/dqbench/scenarios"
)

// TestEightyColumns: on an 80-column terminal, "dqbench list" (and list
// faults) and every error, warning and notice on stderr fit: long lines
// wrap at spaces, nothing is lost.
func TestEightyColumns(t *testing.T) {
	cli, _ := scenarioFiles(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "a-scenario-file-with-a-rather-long-name-in-a-directory.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\nname: bad\nbroker: {kind: kafka}\nstratgies: []\nvariants:\n  - {name: none, strategy: none}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	unreachable := fmt.Errorf(`%w: cannot reach RabbitMQ at amqp://guest:secret@127.0.0.1:1/: dial tcp 127.0.0.1:1: connect: connection refused; start one with "docker compose up -d rabbitmq" (or "service rabbitmq-server start" where it is installed)`, brokers.ErrUnreachable)
	for _, tc := range []struct {
		name string
		args []string
		fake *fakeRunner
		want string // said on stdout or stderr, whatever the wrapping
	}{
		{"list", []string{"list"}, nil, "kafka-transactions"},
		{"list faults", []string{"list", "faults"}, nil, "slow-processing"},
		{"list faults TYPE", []string{"list", "faults", "ack-lost"}, nil, "where it acts:"},
		{"unknown fault type", []string{"list", "faults", "ack-lots"}, nil, `no fault type "ack-lots"`},
		{"invalid scenario", []string{"run", bad}, nil, `unknown key "stratgies" at the top level (allowed: version, name,`},
		{"no such scenario", []string{"run", "quickstrat"}, nil, `no scenario file or built-in named "quickstrat"`},
		{"validate", []string{"validate", bad}, nil, "1 of 1 scenario files invalid"},
		{"unknown flag", []string{"run", cli, "--sede", "1"}, nil, "unknown flag: --sede"},
		{"bad --store", []string{"run", cli, "--store", "mysql://a-user-with-a-long-name@a-host-with-an-even-longer-name.example.com:5432/a-database"}, nil, "--store"},
		{"unreachable broker, json", []string{"run", cli, "-o", "json"}, &fakeRunner{err: unreachable, notStarted: true}, "cannot reach RabbitMQ at amqp://guest:***@127.0.0.1:1/"},
		{"unreachable broker, table", []string{"run", cli}, &fakeRunner{err: unreachable, notStarted: true}, "cannot reach RabbitMQ at amqp://guest:***@127.0.0.1:1/"},
		{"brokers up", []string{"brokers", "up", "redis"}, nil, "takes one broker kind"},
		{"check of no run", []string{"check", filepath.Join(dir, "runs", "a-run-that-was-never-saved-under-a-long-name")}, nil, "a-run-that-was-never-saved"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := tc.fake
			if fake == nil {
				fake = &fakeRunner{}
			}
			var out, errOut bytes.Buffer
			execute(t.Context(), tc.args, Streams{In: strings.NewReader(""), Out: &out, Err: &errOut, Width: 80, ErrWidth: 80, NoColor: true}, fake.run)
			streams := map[string]string{"stdout": out.String(), "stderr": errOut.String()}
			if slices.Contains(tc.args, "json") {
				delete(streams, "stdout") // for machines: never wrapped
			}
			for name, text := range streams {
				for _, l := range strings.Split(text, "\n") {
					if ansi.Width(l) > 80 {
						t.Errorf("%s line of %d columns:\n%s", name, ansi.Width(l), l)
					}
				}
			}
			if all := strings.Join(strings.Fields(out.String()+errOut.String()), " "); !strings.Contains(all, tc.want) {
				t.Errorf("output lacks %q:\n%s%s", tc.want, out.String(), errOut.String())
			}
		})
	}
}

// TestListNarrow: on a terminal too narrow for two columns, each name
// stands on its own line and its description follows, indented; with
// --wide, a line each (TestList).
func TestListNarrow(t *testing.T) {
	r := runStreams(t, Streams{Width: 80}, "list")
	lines := strings.Split(strings.TrimSuffix(r.out, "\n"), "\n")
	var names []string
	for _, l := range lines {
		if !strings.HasPrefix(l, "    ") {
			names = append(names, l)
		}
	}
	if strings.Join(names, " ") != strings.Join(scenarios.Names(), " ") {
		t.Errorf("unindented lines %v, want the built-ins' names", names)
	}
}

// TestWrapWriter: whole lines wrap; what follows the last newline of a
// write (a progress line redrawn with "\r") is written as it is.
func TestWrapWriter(t *testing.T) {
	var buf bytes.Buffer
	w := wrapping(&buf, 20)
	fmt.Fprintln(w, "dqbench: one two three four five six")
	fmt.Fprint(w, "\r\033[Kquickstart: published 10/20 · consumed 5")
	fmt.Fprint(w, "\r\033[K")
	want := "dqbench: one two\n    three four five\n    six\n\r\033[Kquickstart: published 10/20 · consumed 5\r\033[K"
	if buf.String() != want {
		t.Errorf("wrote %q\nwant  %q", buf.String(), want)
	}
	if wrapping(&buf, 0) != &buf {
		t.Error("width 0 (not a terminal) wraps")
	}
}
