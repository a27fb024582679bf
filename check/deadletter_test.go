package check_test

import (
	"slices"
	"testing"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/history"
)

// TestDeadLetterDropped: a reject to the dead-letter exchange is confirmed
// to nobody, so only what the history shows after it says where the
// message went: a delivery back from the wait queue (retry-queue) or a
// dead-letter event (the dead-letter queue's reader). After a complete
// drain, a rejected intent with neither is lost in the broker
// (dead-letter-dropped), whether its failure was transient (a retry) or
// permanent (a poison message the consumer refused: not counted as
// rejected, since nothing kept it); before one, it is not counted.
func TestDeadLetterDropped(t *testing.T) {
	reject := func(intent int) history.Event {
		e := ev(history.Reject, intent)
		e.Reason = "the wait queue"
		return e
	}
	refuse := func(intent int) history.Event {
		e := ev(history.Effect, intent)
		e.Rejected, e.Reason = true, "poison message"
		return e
	}
	back := func(intent int, offset int64) history.Event {
		e := delivered(intent, offset)
		e.Deaths = 2
		return e
	}
	for _, drained := range []bool{true, false} {
		events := join(
			clean(1),
			// 2: applied, failed after its effect, retried through the
			// wait queue, applied again: a duplicate, not a loss.
			published(2), one(delivered(2, 2), effect(2, true), reject(2), back(2, 2), effect(2, true), ev(history.Ack, 2)),
			// 3: failed before its effect, rejected to a full wait queue:
			// never seen again.
			published(3), one(delivered(3, 3), reject(3)),
			// 4: a poison message refused to the dead-letter queue, which
			// the reader saw.
			published(4), one(delivered(4, 4), refuse(4), reject(4), ev(history.DeadLetter, 4)),
			// 5: a poison message refused to a dead-letter queue that is
			// not there.
			published(5), one(delivered(5, 5), refuse(5), reject(5)),
			one(history.Event{Variant: "v", Type: history.Drain, Drained: drained}),
		)
		plan := check.Plan{Variants: []check.PlanVariant{{Name: "v", Strategy: "none"}}}
		in, err := check.Inspect(plan, check.Meta{}, history.Events(events), map[string]history.Audit{"v": applied(map[int]int{1: 1, 2: 2})})
		if err != nil {
			t.Fatal(err)
		}
		v := in.Variants[0]
		wantLost := map[bool]int{true: 2, false: 0}[drained]
		if v.Duplicates != 1 || v.Lost != wantLost || v.LostByCause["dead-letter-dropped"] != wantLost || v.Rejected != 1 || v.DeadLettered != 1 {
			t.Errorf("drained %v: duplicates %d, lost %d %v, rejected %d, dead-lettered %d; want 1, %d dead-letter-dropped, 1, 1",
				drained, v.Duplicates, v.Lost, v.LostByCause, v.Rejected, v.DeadLettered, wantLost)
		}
		if !drained {
			continue
		}
		for _, id := range []int{3, 5} {
			if got := in.Intent("v", id); got.Verdict != check.Lost || got.Cause != check.LostDLXDropped {
				t.Errorf("intent %d: %+v, want lost, dead-letter-dropped", id, got)
			}
		}
		if got := in.Intent("v", 2); got.Verdict != check.Duplicate {
			t.Errorf("intent 2: %+v, want a duplicate", got)
		}
		if a := in.Anomalies("v", 5); a.ByCause[check.LostDLXDropped] != 2 || !slices.Contains(check.Causes, check.LostDLXDropped) {
			t.Errorf("anomalies %v: want 2 dead-letter-dropped, listed in check.Causes for explain", a.ByCause)
		}
	}
}
