package story_test

import (
	"strings"
	"testing"
	"time"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/story"
)

func at(ms int, typ history.Type, intent, consumer int) history.Event {
	return history.Event{T: time.Duration(ms) * time.Millisecond, Variant: "v", Type: typ, Intent: intent, Consumer: consumer}
}

// TestCollect: the timeline bins every event on one axis, crash windows run
// from a crash to the next start, and a story keeps its intent's events
// plus the crash its fault caused and the replacement that redelivered it,
// but not a crash after the intent was done.
func TestCollect(t *testing.T) {
	fault := at(30, history.Fault, 1, 1)
	fault.Fault = "consumer-crash@after-effect-before-ack"
	events := []history.Event{
		at(0, history.Start, 0, 1),
		at(10, history.Publish, 1, 0), at(11, history.Confirm, 1, 0),
		at(12, history.Publish, 2, 0), at(13, history.Confirm, 2, 0),
		at(20, history.Deliver, 1, 1), at(21, history.Effect, 1, 1), fault,
		at(40, history.Crash, 0, 1), at(50, history.Start, 0, 2),
		at(60, history.Deliver, 1, 2), at(61, history.Effect, 1, 2), at(62, history.Ack, 1, 2),
		at(70, history.Deliver, 2, 2), at(71, history.Effect, 2, 2), at(72, history.Ack, 2, 2),
		at(90, history.Crash, 0, 2),
		{T: 95 * time.Millisecond, Variant: "other", Type: history.Publish, Intent: 1},
	}
	for i := range events {
		if events[i].Type == history.Effect {
			events[i].Applied = true
		}
	}
	want := []story.Want{{Variant: "v", IntentVerdict: check.IntentVerdict{Intent: 1, Verdict: check.Duplicate}}}
	c, err := story.Collect(history.Events(events), []string{"v"}, 100*time.Millisecond, 10, want)
	if err != nil {
		t.Fatal(err)
	}
	s := c.Timeline.Variants[0]
	if s.Publishes[1] != 2 || s.Effect[2] != 1 || s.Effect[6] != 1 || s.Effect[7] != 1 || s.Acks[6] != 1 {
		t.Errorf("bins: publishes %v effects %v acks %v", s.Publishes, s.Effect, s.Acks)
	}
	if len(s.Faults) != 1 || s.FaultsPerBin[3] != 1 {
		t.Errorf("faults %v per bin %v", s.Faults, s.FaultsPerBin)
	}
	wantDown := []story.Window{{From: 40 * time.Millisecond, To: 50 * time.Millisecond, Consumer: 1}, {From: 90 * time.Millisecond, To: 100 * time.Millisecond, Consumer: 2}}
	if len(s.Down) != 2 || s.Down[0] != wantDown[0] || s.Down[1] != wantDown[1] {
		t.Errorf("down windows %v, want %v", s.Down, wantDown)
	}
	var got []string
	for _, st := range c.Stories[0].Steps() {
		got = append(got, st.Lane+": "+st.Text)
	}
	wantSteps := []string{
		"producer: published (attempt 1)", "broker: confirmed",
		"consumer 1: delivered", "store: effect applied", "consumer 1: fault consumer-crash@after-effect-before-ack",
		"consumer 1: crashed", "consumer 2: started",
		"consumer 2: redelivered: consumer 1 went away (fault consumer-crash@after-effect-before-ack) before acking it, so the broker delivered it again", "store: effect applied again", "consumer 2: acked",
	}
	if len(got) != len(wantSteps) {
		t.Fatalf("steps:\n%q\nwant:\n%q", got, wantSteps)
	}
	for i := range got {
		if got[i] != wantSteps[i] {
			t.Errorf("step %d: %q, want %q", i, got[i], wantSteps[i])
		}
	}
}

// TestStoryBounded: a story keeps at most MaxStoryEvents events.
func TestStoryBounded(t *testing.T) {
	var events []history.Event
	for i := range story.MaxStoryEvents + 10 {
		events = append(events, at(i, history.Deliver, 1, 1))
	}
	want := []story.Want{{Variant: "v", IntentVerdict: check.IntentVerdict{Intent: 1}}}
	c, err := story.Collect(history.Events(events), []string{"v"}, time.Second, 4, want)
	if err != nil {
		t.Fatal(err)
	}
	if s := c.Stories[0]; len(s.Events) != story.MaxStoryEvents || !s.Truncated {
		t.Errorf("kept %d events, truncated %v", len(s.Events), s.Truncated)
	}
}

// Every redelivery says why it came: after an ack the broker had not
// applied, after the consumer went away, or as a second stored copy.
func TestRedeliveryWhy(t *testing.T) {
	ev := func(typ history.Type, consumer int, pos string) history.Event {
		return history.Event{Variant: "v", Type: typ, Intent: 1, Consumer: consumer, Position: pos}
	}
	tests := []struct {
		events []history.Event
		want   string
	}{
		{[]history.Event{ev(history.Deliver, 1, "q/1"), ev(history.Ack, 1, "q/1"), {Variant: "v", Type: history.Fault, Fault: "leader-failover"}, ev(history.Deliver, 2, "q/1")},
			"it had been acked, but the ack never took effect at the broker (fault leader-failover"},
		{[]history.Event{ev(history.Deliver, 1, "q/1"), ev(history.Ack, 1, "q/1"), ev(history.Deliver, 2, "q/1")},
			"it had been acked, but the broker had not applied the ack"},
		{[]history.Event{ev(history.Deliver, 1, "0@1"), ev(history.Deliver, 1, "0@2")},
			"a second copy the broker stored"},
		// A retry through the wait queue: the reject, then the message
		// back with its x-death count.
		{[]history.Event{ev(history.Deliver, 1, "p#1"), ev(history.Reject, 1, ""), {Variant: "v", Type: history.Deliver, Intent: 1, Consumer: 1, Position: "p#1", Deaths: 2}},
			"back from the wait queue, whose TTL expired it and dead-lettered it back (x-death: dead-lettered 2 times so far)"},
	}
	for _, tc := range tests {
		s := &story.Story{Variant: "v", Events: tc.events}
		steps := s.Steps()
		last := steps[len(steps)-1].Text
		if !strings.Contains(last, tc.want) {
			t.Errorf("%q, want it to say %q", last, tc.want)
		}
	}
}
