package check

import (
	"testing"

	"github.com/dqbench/dqbench/plan"
)

// TestEveryCountIsCounted holds the checker's rules to plan.Table: each
// rule names a count, and each count has a rule or is one that
// tally.counts counts itself.
func TestEveryCountIsCounted(t *testing.T) {
	bySelf := map[string]bool{"lost": true, "starved": true, "faults_injected": true}
	for name := range perIntent {
		if _, ok := plan.LookupCount(name); !ok {
			t.Errorf("perIntent has a rule for %q, which plan.Table lacks", name)
		}
	}
	for _, row := range plan.Table {
		if _, ok := perIntent[row.Name]; ok == bySelf[row.Name] {
			t.Errorf("count %q: give it a rule in perIntent (check/counts.go), or count it in tally.counts", row.Name)
		}
	}
}
