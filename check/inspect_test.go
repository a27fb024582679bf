package check_test

import (
	"testing"
	"time"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/history"
)

// TestInspect: every anomalous intent is listed with its cause, the causes
// add up to the counts, the sample keeps the lowest ids, and an intent the
// counts call clean is OK.
func TestInspect(t *testing.T) {
	events := join(
		clean(1),
		// 2: applied, redelivered, applied again.
		clean(2), one(delivered(2, 2), effect(2, true)),
		// 3: stored twice (two positions), both applied.
		published(3), one(delivered(3, 3), effect(3, true), delivered(3, 30), effect(3, true)),
		// 4, 5, 6: skipped as duplicates, never applied.
		published(4), one(delivered(4, 4), effect(4, false)),
		published(5), one(delivered(5, 5), effect(5, false)),
		published(6), one(delivered(6, 6), effect(6, false)),
		// 7: confirmed, never delivered.
		published(7),
		// 8: skipped at its first delivery: another intent had its id.
		published(8), one(delivered(8, 8), firstEffect(8, false)),
		// 9: skipped at its second delivery (the first died mid-way).
		published(9), one(delivered(9, 9), delivered(9, 9), secondEffect(9, false)),
		one(history.Event{Variant: "v", Type: history.Drain, Drained: true, T: 9 * time.Second}),
	)
	audit := applied(map[int]int{1: 1, 2: 2, 3: 2})
	plan := check.Plan{Variants: []check.PlanVariant{{Name: "v", Strategy: "none"}}}
	in, err := check.Inspect(plan, check.Meta{}, history.Events(events), map[string]history.Audit{"v": audit})
	if err != nil {
		t.Fatal(err)
	}
	if in.End != 9*time.Second {
		t.Errorf("End = %v, want 9s", in.End)
	}
	a := in.Anomalies("v", 2)
	want := map[check.Cause]int{check.DupRedelivered: 1, check.DupStoredTwice: 1, check.LostSkipped: 4, check.LostIDShared: 1, check.LostUndelivered: 1}
	for c, n := range want {
		if a.ByCause[c] != n {
			t.Errorf("ByCause[%s] = %d, want %d (all: %v)", c, a.ByCause[c], n, a.ByCause)
		}
	}
	v := in.Variants[0]
	if a.Total() != v.Duplicates+v.Lost {
		t.Errorf("Total = %d, counts say duplicates %d + lost %d", a.Total(), v.Duplicates, v.Lost)
	}
	if s := a.Sample[check.LostSkipped]; len(s) != 2 || s[0].Intent != 4 || s[1].Intent != 5 {
		t.Errorf("sample of skipped = %+v, want intents 4 and 5", s)
	}
	for id, want := range map[int]check.Verdict{1: check.OK, 2: check.Duplicate, 3: check.Duplicate, 4: check.Lost, 7: check.Lost, 8: check.Lost, 99: check.OK} {
		if got := in.Intent("v", id).Verdict; got != want {
			t.Errorf("intent %d: %s, want %s", id, got, want)
		}
	}
	if got := in.Intent("nope", 1).Verdict; got != check.OK {
		t.Errorf("unknown variant: %s", got)
	}
}

// TestInspectUndrained: an undelivered intent is not lost when the drain
// gave up, as in the counts.
func TestInspectUndrained(t *testing.T) {
	events := join(published(1), one(history.Event{Variant: "v", Type: history.Drain, Reason: "no progress"}))
	plan := check.Plan{Variants: []check.PlanVariant{{Name: "v", Strategy: "none"}}}
	in, err := check.Inspect(plan, check.Meta{}, history.Events(events), map[string]history.Audit{"v": {}})
	if err != nil {
		t.Fatal(err)
	}
	if got := in.Intent("v", 1).Verdict; got != check.OK || in.Variants[0].Lost != 0 {
		t.Errorf("verdict %s, lost %d; want ok and 0", got, in.Variants[0].Lost)
	}
}

func firstEffect(intent int, applied bool) history.Event {
	e := effect(intent, applied)
	e.Attempt = 1
	return e
}

func secondEffect(intent int, applied bool) history.Event {
	e := effect(intent, applied)
	e.Attempt = 2
	return e
}
