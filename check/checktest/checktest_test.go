package checktest_test

import (
	"strings"
	"testing"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/check/checktest"
)

func TestDiffCounts(t *testing.T) {
	got := check.Counts{Attempted: 3, Delivered: 3, Lost: 1}
	for _, tc := range []struct {
		name string
		want map[string]int
		diff string // "" or a substring of the difference
	}{
		{"only the named counts", map[string]int{"attempted": 3, "lost": 1}, ""},
		{"a named zero", map[string]int{"duplicates": 0}, ""},
		{"nothing named", nil, ""},
		{"a wrong value", map[string]int{"lost": 0, "attempted": 3}, "lost 1, want 0"},
		{"table order", map[string]int{"lost": 0, "attempted": 2}, "attempted 3, want 2; lost 1, want 0"},
		{"an unknown name", map[string]int{"duplicate": 0}, `no count named "duplicate" (counts: attempted, `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			diff := checktest.DiffCounts(got, tc.want)
			if (diff == "") != (tc.diff == "") || !strings.Contains(diff, tc.diff) {
				t.Errorf("DiffCounts = %q, want %q", diff, tc.diff)
			}
		})
	}
}
