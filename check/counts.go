package check

import (
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/plan"
)

// What the checker is given and what it answers in are declared below it,
// in packages the recording side imports without reaching the checker
// (history: the run's own record; plan: the counts and the expectations).
// These are their names in the checker's vocabulary.
type (
	Meta        = history.Meta
	Provenance  = history.Provenance
	Plan        = plan.Plan
	PlanVariant = plan.Variant
	Window      = plan.Window
	Varies      = plan.Varies
	Expect      = plan.Expect
	Counts      = plan.Counts
	Count       = plan.Count
)

// Table is every count, in report order: plan.Table, the same slice (a
// count is added to plan.Table's literal, never appended at run time).
var Table = plan.Table

// CountNames lists the count names in report order.
func CountNames() []string { return plan.CountNames() }

// LookupCount returns the count named name.
func LookupCount(name string) (Count, bool) { return plan.LookupCount(name) }

// perIntent is what one intent adds to each count of plan.Table, given
// what the history and the audit say of it (its facts). A count that is
// not here is counted in tally.counts: lost and starved (which know the
// drain) and faults_injected (events, not intents).
var perIntent = map[string]func(f *facts) int{
	"attempted":       func(f *facts) int { return b2i(f.has(published)) },
	"acknowledged":    func(f *facts) int { return b2i(f.has(published) && f.has(confirmed)) },
	"indeterminate":   func(f *facts) int { return b2i(f.has(published) && !f.has(confirmed)) },
	"delivered":       func(f *facts) int { return b2i(f.has(published) && f.deliveries > 0) },
	"redelivered":     func(f *facts) int { return b2i(f.has(published) && (f.deliveries > 1 || f.has(flagged))) },
	"effects":         func(f *facts) int { return int(f.applied) },
	"duplicates":      func(f *facts) int { return b2i(f.has(published) && f.applied > 1) },
	"refused":         func(f *facts) int { return b2i(f.brokerRefused()) },
	"rejected":        func(f *facts) int { return b2i(f.refused()) },
	"out_of_order":    func(f *facts) int { return b2i(f.has(outOfOrder)) },
	"unexpected":      func(f *facts) int { return b2i(!f.has(published) && f.applied > 0) },
	"dead_lettered":   func(f *facts) int { return b2i(f.has(deadLettered)) },
	"aborted_seen":    func(f *facts) int { return b2i(f.has(abortedSeen)) },
	"aborted_written": func(f *facts) int { return b2i(f.has(abortedWritten)) },
}

// rule is one count's perIntent, beside its row, for the one pass.
type rule struct {
	row       Count
	perIntent func(f *facts) int
}

// rules are perIntent's counts in Table's order (TestEveryCountIsCounted
// holds the two together).
var rules = func() []rule {
	var out []rule
	for _, row := range plan.Table {
		if fn := perIntent[row.Name]; fn != nil {
			out = append(out, rule{row, fn})
		}
	}
	return out
}()

// addIntent adds what intent f adds to each count of c.
func addIntent(c *Counts, f *facts) {
	for _, r := range rules {
		r.row.Add(c, r.perIntent(f))
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
