package cmd

import (
	"strings"
	"testing"

	"github.com/dqbench/dqbench/scenario"
	"github.com/dqbench/dqbench/scenarios"
)

// TestList: dqbench list prints every embedded built-in, sorted, one line
// each: its name, then its description.
func TestList(t *testing.T) {
	r := run(t, nil, "list")
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
