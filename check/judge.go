package check

import (
	"fmt"
	"sort"
	"time"

	"github.com/dqbench/dqbench/faults"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/scenario"
	"github.com/dqbench/dqbench/store"
	"github.com/dqbench/dqbench/strategy"
)

// Meta is what a run records about itself besides the history.
type Meta struct {
	Scenario string        `json:"scenario"`
	Seed     int64         `json:"seed"`
	Messages int           `json:"messages"`
	Broker   string        `json:"broker"`
	Duration time.Duration `json:"duration_ns"`
}

// ExpectationResult is one checked expectation.
type ExpectationResult struct {
	Check  string `json:"check"` // e.g. "duplicates > 0"
	Passed bool   `json:"passed"`
	Actual int    `json:"actual"`
}

// Variant is the judgement of one variant.
type Variant struct {
	Name     string `json:"name"`
	Strategy string `json:"strategy"`
	Passed   bool   `json:"passed"`
	Counts
	Expectations []ExpectationResult `json:"expectations"`
	// Notes explain where duplicates and losses came from.
	Notes []string `json:"notes,omitempty"`
	// Invalid lists why this variant's experiment does not count (a fault
	// that never fired, an inconsistent store); an invalid variant fails
	// the run with exit code 3.
	Invalid []string `json:"invalid,omitempty"`
}

// Run is the judgement of one scenario run.
type Run struct {
	Meta
	Passed   bool      `json:"passed"`
	Variants []Variant `json:"variants"`
}

// Valid reports whether every variant's experiment counts.
func (r Run) Valid() bool {
	for _, v := range r.Variants {
		if len(v.Invalid) > 0 {
			return false
		}
	}
	return true
}

// Judge counts every variant of s from events and audits and checks the
// scenario's expectations. It reads nothing else.
func Judge(s *scenario.Scenario, meta Meta, events []history.Event, audits map[string]store.Audit) Run {
	byVariant := map[string][]history.Event{}
	for _, e := range events {
		byVariant[e.Variant] = append(byVariant[e.Variant], e)
	}
	run := Run{Meta: meta, Passed: true}
	for _, v := range s.Variants {
		evs := byVariant[v.Name]
		audit, haveAudit := audits[v.Name]
		counts, notes := Tally(evs, audit)
		res := Variant{Name: v.Name, Strategy: v.Strategy, Passed: true, Counts: counts, Notes: notes}
		if !haveAudit {
			res.Invalid = append(res.Invalid, "no store audit was recorded for this variant")
		}
		if len(audit.BalanceMismatch) > 0 {
			res.Invalid = append(res.Invalid, fmt.Sprintf("%v: accounts %v", ErrInconsistent, audit.BalanceMismatch))
		}
		fired := map[string]int{}
		for _, e := range evs {
			if e.Type == history.Fault {
				fired[e.Fault]++
			}
		}
		for _, f := range s.Faults {
			if Applies(f, v) && fired[f.Name] == 0 {
				res.Invalid = append(res.Invalid, fmt.Sprintf("%v: %s (raise messages or lower every/probability)", ErrFaultNeverFired, f.Name))
			}
		}
		names := make([]string, 0, len(v.Expect))
		for name := range v.Expect {
			names = append(names, name)
		}
		sort.Slice(names, func(i, j int) bool { return countOrder(names[i]) < countOrder(names[j]) })
		for _, name := range names {
			exp := v.Expect[name]
			got, _ := counts.Get(name)
			ok := exp.Holds(got)
			res.Expectations = append(res.Expectations, ExpectationResult{
				Check: name + " " + exp.String(), Passed: ok, Actual: got,
			})
			res.Passed = res.Passed && ok
		}
		if len(res.Invalid) > 0 {
			res.Passed = false
		}
		run.Passed = run.Passed && res.Passed
		run.Variants = append(run.Variants, res)
	}
	return run
}

// Applies reports whether fault f can fire in variant v: a consumer crash
// needs its crash point to exist in v's strategy.
func Applies(f scenario.Fault, v scenario.Variant) bool {
	if f.Type != faults.ConsumerCrash {
		return true
	}
	st, ok := strategy.Lookup(v.Strategy)
	return ok && strategy.HasPoint(st, faults.Point(f.At))
}

func countOrder(name string) int {
	for i, n := range scenario.CountNames {
		if n == name {
			return i
		}
	}
	return len(scenario.CountNames)
}
