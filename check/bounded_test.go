package check_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/history"
)

// TestMemoryFollowsTheHistory: a saved run from someone else that names
// intent 9,999,999 in each of 60 variants, one event each, is judged in
// memory proportional to its 120 events, not to the 10 million intents
// per variant it claims (60 slices of 10 million facts took 2.1 GB).
func TestMemoryFollowsTheHistory(t *testing.T) {
	const messages, far = 10_000_000, 9_999_999
	var plan check.Plan
	var events []history.Event
	audits := map[string]history.Audit{}
	for i := range 60 {
		name := fmt.Sprintf("v%d", i)
		plan.Variants = append(plan.Variants, check.PlanVariant{Name: name, Strategy: "none"})
		events = append(events,
			history.Event{Variant: name, Type: history.Publish, Intent: far, Attempt: 1},
			history.Event{Variant: name, Type: history.Publish, Intent: 1, Attempt: 1})
		audits[name] = history.Audit{Applied: map[int]int{far: 1, 1: 1}}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	run, err := check.Judge(plan, check.Meta{Messages: messages}, history.Events(events), audits)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
		t.Errorf("judging 120 events allocated %d MiB; want memory that follows the history, not the intents it claims", got>>20)
	}
	// The far intent is still judged: published and applied once.
	if v := run.Variants[0]; v.Counts.Effects != 2 || v.Counts.Duplicates != 0 {
		t.Errorf("counts %+v: want 2 effects (intents 1 and %d), no duplicate", v.Counts, far)
	}
}
