package check_test

import (
	"strings"
	"testing"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/check/checktest"
	"github.com/dqbench/dqbench/history"
)

// attempt: a delivery of intent, its attempt-th (its delivery count), to
// consumer instance consumer.
func attempt(e history.Event, attempt, consumer int) history.Event {
	e.Attempt, e.Consumer = attempt, consumer
	return e
}

// crashes: the consumer instance holding intent's attempt-th delivery
// crashed before processing it; the broker gives it out again.
func crashes(intent, n, consumer int) []history.Event {
	f := attempt(ev(history.Fault, intent), n, consumer)
	f.Fault, f.Point = "consumer-crash@before-process", "before-process"
	return one(attempt(delivered(intent, int64(intent)), n, consumer), f, attempt(ev(history.Crash, 0), 0, consumer))
}

// failsOnce: intent's attempt-th delivery failed its processing this time
// (fail-once) and was requeued.
func failsOnce(intent, n, consumer int) []history.Event {
	f := attempt(ev(history.Fault, intent), n, consumer)
	f.Fault, f.Point = "fail-once@after-effect-before-ack", "after-effect-before-ack"
	return one(attempt(delivered(intent, int64(intent)), n, consumer), f)
}

// poisoned: intent's attempt-th delivery failed as a poison message: an
// effect refused, requeued.
func poisoned(intent, n int) []history.Event {
	f := attempt(ev(history.Fault, intent), n, 1)
	f.Fault = "poison-message"
	e := attempt(ev(history.Effect, intent), n, 1)
	e.Rejected, e.Reason = true, "processing failed (poison message)"
	return one(attempt(delivered(intent, int64(intent)), n, 1), f, e)
}

// settles: intent's attempt-th delivery applied and acked.
func settles(intent, n int) []history.Event {
	return one(attempt(delivered(intent, int64(intent)), n, 1), attempt(effect(intent, true), n, 1), attempt(ev(history.Ack, intent), n, 1))
}

// TestStillLoopingNotLost: after a drain that gave up, an intent still
// looping on the broker (its last delivery went back unsettled: a crash
// before the ack, a failure requeued) may still be applied: it is not
// counted lost, and the notes name it. One that went back to nothing (acked
// before processing, a QoS 0 delivery) is lost as before, and so is one
// still looping after a drain that says the broker held nothing.
func TestStillLoopingNotLost(t *testing.T) {
	gaveUp := ev(history.Drain, 0)
	gaveUp.Backlog, gaveUp.Reason = 2, "no intent was acked or applied for the first time in 2s"
	drained := ev(history.Drain, 0)
	drained.Drained = true
	ackFirst := func(intent, n, consumer int) []history.Event {
		e := crashes(intent, n, consumer)
		return append(one(e[0], attempt(ev(history.Ack, intent), n, consumer)), e[1:]...)
	}
	qos0 := func(intent, n, consumer int) []history.Event {
		e := crashes(intent, n, consumer)
		e[0].QoS = "0"
		return e
	}
	for _, tc := range []struct {
		name    string
		events  []history.Event
		applied map[int]int // the audit
		lost    int
		note    string // a substring of a note; "" for no note of looping
	}{
		{"crash loop, drain gave up", join(clean(1), published(2), published(3),
			crashes(2, 1, 1), crashes(3, 2, 2), crashes(2, 3, 3), crashes(3, 4, 4), one(gaveUp)),
			map[int]int{1: 1}, 0, "2 intents were still looping on the broker when the drain gave up (intents 2, 3)"},
		{"transient failures requeued, drain gave up", join(clean(1), published(2),
			failsOnce(2, 1, 1), failsOnce(2, 2, 1), one(gaveUp)),
			map[int]int{1: 1}, 0, "1 intents were still looping on the broker when the drain gave up (intents 2)"},
		{"crash loop, run cut short before its drain", join(clean(1), published(2), crashes(2, 1, 1)),
			map[int]int{1: 1}, 0, "1 intents were still looping on the broker when the run ended, before its drain (intents 2)"},
		{"crashed once, then applied and acked", join(clean(1), published(2), crashes(2, 1, 1), settles(2, 2), one(gaveUp)),
			map[int]int{1: 1, 2: 1}, 0, ""},
		{"acked before processing, then crashed", join(clean(1), published(2), ackFirst(2, 1, 1), one(gaveUp)),
			map[int]int{1: 1}, 1, ""},
		{"a QoS 0 delivery, then crashed", join(clean(1), published(2), qos0(2, 1, 1), one(gaveUp)),
			map[int]int{1: 1}, 1, ""},
		{"crash loop, drain drained", join(clean(1), published(2), crashes(2, 1, 1), one(drained)),
			map[int]int{1: 1}, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, notes := tally(t, tc.events, applied(tc.applied))
			checktest.WantCounts(t, got, map[string]int{"effects": len(tc.applied), "lost": tc.lost, "duplicates": 0})
			all := strings.Join(notes, "\n")
			if tc.note == "" && strings.Contains(all, "still looping") || !strings.Contains(all, tc.note) {
				t.Errorf("notes:\n%s\nwant one with %q", all, tc.note)
			}
			if tc.lost > 0 && !strings.Contains(all, "lost in the consumer (unprocessed)") {
				t.Errorf("notes:\n%s\nwant the loss in the consumer (unprocessed)", all)
			}
		})
	}

	// The judgement: invalid, as every drain that gave up is.
	run := judge(t, check.Plan{Variants: []check.PlanVariant{{Name: "v", Strategy: "none"}}}, check.Meta{},
		join(clean(1), published(2), crashes(2, 1, 1), crashes(2, 2, 2), one(gaveUp)),
		map[string]history.Audit{"v": applied(map[int]int{1: 1})})
	if v := run.Variants[0]; run.Valid() || v.Lost != 0 || len(v.Invalid) != 1 || !strings.HasPrefix(v.Invalid[0], check.ErrIncomplete.Error()) {
		t.Errorf("crash loop: valid %v, lost %d, invalid %q: want invalid for the drain that gave up alone, nothing lost", run.Valid(), v.Lost, v.Invalid)
	}
}

// TestDrainClaimsChecked: the drain's looping list is recomputed from the
// history (an intent loops while its last handback is later than its last
// settle) and compared: a drain that lists an intent the history shows
// acked, or leaves out one the history shows looping, makes the variant
// invalid; one that lists exactly those loops is valid.
func TestDrainClaimsChecked(t *testing.T) {
	drain := func(drained, starved bool, backlog int64, intents ...int) []history.Event {
		e := ev(history.Drain, 0)
		e.Drained, e.Starved, e.Backlog, e.Intents = drained, starved, backlog, intents
		e.Reason = "poison messages left looping"
		return one(e)
	}
	for _, tc := range []struct {
		name    string
		events  []history.Event
		applied map[int]int // the audit
		// invalid: substrings of the one invalid line; none for a valid run.
		invalid []string
	}{
		{"a poison message looping, listed", join(clean(1), published(2), poisoned(2, 1), poisoned(2, 2), drain(true, false, 1, 2)),
			map[int]int{1: 1}, nil},
		{"starved behind a listed poison message", join(clean(1), published(2), published(3), poisoned(2, 1), poisoned(2, 2), drain(false, true, 2, 2)),
			map[int]int{1: 1}, nil},
		{"nothing looping, nothing listed", join(clean(1), clean(2), drain(true, false, 0)),
			map[int]int{1: 1, 2: 1}, nil},
		{"requeued after a transient failure, then acked, listed as looping", join(clean(1), published(2), published(3),
			failsOnce(2, 1, 1), settles(2, 2), poisoned(3, 1), poisoned(3, 2), drain(true, false, 2, 2, 3)),
			map[int]int{1: 1, 2: 1},
			[]string{check.ErrDrainClaims.Error(), "lists 1 intents as still looping that the history shows not looping at its end (acked: 2)"}},
		{"never delivered, listed as looping", join(clean(1), published(2), drain(true, false, 1, 2)),
			map[int]int{1: 1},
			[]string{check.ErrDrainClaims.Error(), "(never delivered: 2)"}},
		{"a crash loop left out of the list", join(clean(1), published(2), published(3), poisoned(2, 1), poisoned(2, 2),
			crashes(3, 1, 1), crashes(3, 2, 2), drain(true, false, 2, 2)),
			map[int]int{1: 1},
			[]string{check.ErrDrainClaims.Error(), "leaves out 1 intents the history shows handed back and not settled since (3)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := judge(t, check.Plan{Variants: []check.PlanVariant{{Name: "v", Strategy: "none"}}}, check.Meta{},
				tc.events, map[string]history.Audit{"v": applied(tc.applied)})
			v := run.Variants[0]
			if tc.invalid == nil {
				if !run.Valid() {
					t.Errorf("invalid %q, want a valid run", v.Invalid)
				}
				return
			}
			if run.Valid() || len(v.Invalid) != 1 {
				t.Fatalf("invalid %q, want one line with %q", v.Invalid, tc.invalid)
			}
			for _, want := range tc.invalid {
				if !strings.Contains(v.Invalid[0], want) {
					t.Errorf("invalid %q, want it to say %q", v.Invalid[0], want)
				}
			}
			for _, n := range v.Notes {
				if strings.Contains(n, "poison messages were still looping") {
					t.Errorf("note %q: a list the history disagrees with is not repeated as a finding", n)
				}
			}
		})
	}
}
