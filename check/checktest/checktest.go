// Package checktest compares counts in tests by their names in the count
// table (check.Table), so a test states only the counts it is about and a
// new count breaks no test that does not name it:
//
//	checktest.WantCounts(t, got, map[string]int{"lost": 1, "duplicates": 0})
package checktest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dqbench/dqbench/check"
)

// WantCounts fails t unless every count named in want has its value in
// got. A name that is not in check.Table fails the test too (a typo must
// not pass as "not compared"). Counts want does not name are not compared.
func WantCounts(t testing.TB, got check.Counts, want map[string]int) {
	t.Helper()
	if diff := DiffCounts(got, want); diff != "" {
		t.Errorf("counts: %s", diff)
	}
}

// DiffCounts says how got differs from want in the counts want names, in
// count-table order, or "" when they agree.
func DiffCounts(got check.Counts, want map[string]int) string {
	var diffs, unknown []string
	for _, row := range check.Table {
		n, ok := want[row.Name]
		if !ok {
			continue
		}
		if v := row.Value(got); v != n {
			diffs = append(diffs, fmt.Sprintf("%s %d, want %d", row.Name, v, n))
		}
	}
	for name := range want {
		if _, ok := check.LookupCount(name); !ok {
			unknown = append(unknown, fmt.Sprintf("%q", name))
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		diffs = append(diffs, fmt.Sprintf("no count named %s (counts: %s)",
			strings.Join(unknown, ", "), strings.Join(check.CountNames(), ", ")))
	}
	return strings.Join(diffs, "; ")
}
