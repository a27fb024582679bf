package check_test

import (
	"os"
	"strings"
	"testing"

	"github.com/dqbench/dqbench/check"
)

// TestCountsDocumented: docs/scenario.md's table of counts has a row for
// every count in check.Table (the one docs line a new count needs).
func TestCountsDocumented(t *testing.T) {
	b, err := os.ReadFile("../docs/scenario.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range check.CountNames() {
		if !strings.Contains(string(b), "\n| `"+name+"` | ") {
			t.Errorf("docs/scenario.md's table of counts has no row for %s; add \"| `%s` | what it counts |\"", name, name)
		}
	}
}
