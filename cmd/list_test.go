package cmd

import (
	"strings"
	"testing"

	"github.com/dqbench/dqbench/internal/ansi"
	"github.com/dqbench/dqbench/report"

	"github.com/dqbench/dqbench/scenario"
	"github.com/dqbench/dqbench/scenarios"
)

// TestList: dqbench list --wide prints every embedded built-in, sorted,
// one line each: its name, then its description.
func TestList(t *testing.T) {
	r := run(t, nil, "list", "--wide")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr: %s", r.code, r.err)
	}
	lines := strings.Split(strings.TrimSuffix(r.out, "\n"), "\n")
	names := scenarios.Names()
	if len(names) == 0 || len(lines) != len(names) {
		t.Fatalf("%d lines for %d built-ins:\n%s", len(lines), len(names), r.out)
	}
	for i, name := range names {
		s, err := scenario.Resolve(name)
		if err != nil {
			t.Fatal(err)
		}
		fields := strings.Fields(lines[i])
		if fields[0] != name || strings.Join(fields[1:], " ") != strings.Join(strings.Fields(s.Description), " ") {
			t.Errorf("line %d = %q, want %s and its description %q", i+1, lines[i], name, s.Description)
		}
	}
}

// TestListPiped: piped, dqbench list and list faults fit 80 columns, as
// the report's table does, and lose no word.
func TestListPiped(t *testing.T) {
	for _, args := range [][]string{{"list"}, {"list", "faults"}, {"list", "faults", "ack-lost"}} {
		r := run(t, nil, args...)
		wide := run(t, nil, append(args, "--wide")...)
		if r.code != 0 || wide.code != 0 {
			t.Fatalf("%v: exit %d, %d: %s", args, r.code, wide.code, r.err)
		}
		for _, l := range strings.Split(r.out, "\n") {
			if ansi.Width(l) > report.PipedWidth {
				t.Errorf("%v: a line of %d columns: %s", args, ansi.Width(l), l)
			}
		}
		if strings.Join(strings.Fields(r.out), " ") != strings.Join(strings.Fields(wide.out), " ") {
			t.Errorf("%v: the words differ from --wide's:\n%s\n%s", args, r.out, wide.out)
		}
	}
}
