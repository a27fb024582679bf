package check_test

import (
	"testing"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/history"
)

// TestProducerApp: what the producer application did (producer.pattern)
// is counted from the history alone. An intent written and never
// published is lost in the producer, even when the drain gave up (it never
// reached the broker); one the outbox relay published twice, both copies
// applied, is a duplicate with its own cause.
func TestProducerApp(t *testing.T) {
	crash := func(intent int, point string) history.Event {
		e := ev(history.Fault, intent)
		e.Fault, e.Point, e.Attempt = "producer-app-crash@"+point, point, 1
		return e
	}
	for _, drained := range []bool{true, false} {
		events := join(
			one(ev(history.Written, 1)), clean(1),
			// 2: written, the application died before the publish.
			one(ev(history.Written, 2), crash(2, "between-write-and-publish")),
			// 3: the relay died after the confirm; published again.
			one(ev(history.Written, 3)), published(3), one(crash(3, "after-publish-before-mark")), published(3),
			one(delivered(3, 3), effect(3, true), delivered(3, 4), effect(3, true)),
			// 4: a publish never confirmed nor delivered.
			one(ev(history.Written, 4), ev(history.Publish, 4)),
			one(history.Event{Variant: "v", Type: history.Drain, Drained: drained}),
		)
		plan := check.Plan{Variants: []check.PlanVariant{{Name: "v", Strategy: "none"}}}
		in, err := check.Inspect(plan, check.Meta{}, history.Events(events), map[string]history.Audit{"v": applied(map[int]int{1: 1, 3: 2})})
		if err != nil {
			t.Fatal(err)
		}
		v := in.Variants[0]
		wantLost := map[bool]int{true: 2, false: 1}[drained] // 4 counts only after a complete drain
		if v.Attempted != 3 || v.Duplicates != 1 || v.Lost != wantLost || v.LostByCause["unpublished"] != 1 {
			t.Errorf("drained %v: attempted %d, duplicates %d, lost %d %v; want 3, 1, %d with 1 unpublished",
				drained, v.Attempted, v.Duplicates, v.Lost, v.LostByCause, wantLost)
		}
		if got := in.Intent("v", 2); got.Verdict != check.Lost || got.Cause != check.LostUnpublished {
			t.Errorf("drained %v: intent 2: %+v, want lost, unpublished", drained, got)
		}
		if got := in.Intent("v", 3); got.Verdict != check.Duplicate || got.Cause != check.DupRelayed {
			t.Errorf("drained %v: intent 3: %+v, want duplicate, relayed-again", drained, got)
		}
	}
}
