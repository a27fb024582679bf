package check_test

import (
	"testing"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/check/checktest"
	"github.com/dqbench/dqbench/history"
)

// consumed: a delivery of intent to consumer instance gen.
func consumed(intent, gen int) history.Event {
	e := delivered(intent, int64(intent))
	e.Consumer = gen
	return e
}

func crash(gen int) history.Event {
	e := ev(history.Crash, 0)
	e.Consumer = gen
	return e
}

// TestInterrupted: a run interrupted before its end (an interrupted event
// in the history) counts no intent in flight at the interrupt as lost (in
// a consumer's hands, or given back to the broker by a crash and not yet
// redelivered, or written and not yet published), still counts a loss the
// history settled before it (acked, then the consumer died), and judges
// no expectation: each is SKIP. An interrupt after a complete drain
// changes nothing.
func TestInterrupted(t *testing.T) {
	interrupted := ev(history.Interrupted, 0)
	drained := ev(history.Drain, 0)
	drained.Drained = true
	write := ev(history.Written, 3)
	for _, tt := range []struct {
		name   string
		events []history.Event
		want   map[string]int
		skip   bool
	}{
		{"in hand", join(clean(1), published(2), []history.Event{consumed(2, 1), interrupted}),
			map[string]int{"lost": 0}, true},
		{"crashed, not yet redelivered", join(clean(1), published(2), []history.Event{consumed(2, 1), crash(1), interrupted}),
			map[string]int{"lost": 0}, true},
		{"written, not yet published", join(clean(1), []history.Event{write, interrupted}),
			map[string]int{"lost": 0}, true},
		{"acked, then the consumer died", join(clean(1), published(2), []history.Event{consumed(2, 1), ev(history.Ack, 2), crash(1), interrupted}),
			map[string]int{"lost": 1}, true},
		{"acked first, in hand", join(clean(1), published(2), []history.Event{consumed(2, 1), ev(history.Ack, 2), interrupted}),
			map[string]int{"lost": 0}, true},
		{"not interrupted", join(clean(1), published(2), []history.Event{consumed(2, 1), drained}),
			map[string]int{"lost": 1}, false},
		{"interrupted after a complete drain", join(clean(1), published(2), []history.Event{consumed(2, 1), drained, interrupted}),
			map[string]int{"lost": 1}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			plan := check.Plan{Variants: []check.PlanVariant{{Name: "v", Strategy: "none", Expect: []check.Expect{expect("lost", "==", 0)}}}}
			applied := map[int]int{1: 1}
			run := judge(t, plan, check.Meta{Incomplete: "interrupted"}, tt.events, map[string]history.Audit{"v": {Applied: applied}})
			v := run.Variants[0]
			checktest.WantCounts(t, v.Counts, tt.want)
			e := v.Expectations[0]
			if e.Skipped != tt.skip || e.Passed && tt.skip {
				t.Errorf("expectation %s: skipped %v, passed %v; want skipped %v", e.Check, e.Skipped, e.Passed, tt.skip)
			}
			want := "FAIL"
			switch {
			case tt.skip:
				want = "SKIP"
			case tt.want["lost"] == 0:
				want = "PASS"
			}
			if e.Verdict() != want {
				t.Errorf("verdict %s, want %s", e.Verdict(), want)
			}
			for _, inv := range v.Invalid {
				if tt.skip {
					t.Errorf("interrupted, yet invalid: %s", inv)
				}
			}
		})
	}
}
