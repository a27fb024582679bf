package check_test

import (
	"maps"
	"testing"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/history"
)

// TestLegs: a duplicate from two stored copies is the publisher leg's, one
// from the same copy delivered twice is the subscriber leg's, a loss is the
// subscriber leg's; deliveries are counted per QoS level.
func TestLegs(t *testing.T) {
	ev := func(typ history.Type, intent int, pos, qos string) history.Event {
		return history.Event{Variant: "v", Type: typ, Intent: intent, Position: pos, QoS: qos}
	}
	events := []history.Event{
		ev(history.Publish, 1, "", ""), ev(history.Confirm, 1, "", ""),
		ev(history.Deliver, 1, "c1/1", "1"), ev(history.Deliver, 1, "c2/2", "1"), // stored twice
		ev(history.Publish, 2, "", ""), ev(history.Confirm, 2, "", ""),
		ev(history.Deliver, 2, "c3/3", "1"), ev(history.Deliver, 2, "c3/3", "1"), // redelivered
		ev(history.Publish, 3, "", ""), ev(history.Confirm, 3, "", ""),
		ev(history.Deliver, 3, "c4/4", "1"), // never applied
		ev(history.Publish, 4, "", ""), ev(history.Confirm, 4, "", ""),
		ev(history.Deliver, 4, "c5/5", "1"), ev(history.Deliver, 4, "c5/5", "1"), // redelivered, applied once
	}
	plan := check.Plan{Variants: []check.PlanVariant{{Name: "v", Strategy: "none"}}}
	run, err := check.Judge(plan, check.Meta{}, history.Events(events),
		map[string]history.Audit{"v": {Applied: map[int]int{1: 2, 2: 2, 4: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	v := run.Variants[0]
	want := check.Legs{Publisher: check.LegCounts{Duplicates: 1}, Subscriber: check.LegCounts{Duplicates: 1, Lost: 1}}
	if v.Legs == nil || *v.Legs != want {
		t.Errorf("legs %+v, want %+v", v.Legs, want)
	}
	if !maps.Equal(v.DeliveredQoS, map[string]int{"1": 7}) {
		t.Errorf("delivered_qos %v, want 7 at QoS 1", v.DeliveredQoS)
	}
}

// TestNoLegsWithoutQoS: a broker without QoS levels reports no legs.
func TestNoLegsWithoutQoS(t *testing.T) {
	events := []history.Event{
		{Variant: "v", Type: history.Publish, Intent: 1},
		{Variant: "v", Type: history.Deliver, Intent: 1, Position: "0@1"},
	}
	plan := check.Plan{Variants: []check.PlanVariant{{Name: "v", Strategy: "none"}}}
	run, err := check.Judge(plan, check.Meta{}, history.Events(events), map[string]history.Audit{"v": {Applied: map[int]int{1: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if v := run.Variants[0]; v.Legs != nil || v.DeliveredQoS != nil {
		t.Errorf("legs %+v, delivered_qos %v: want none", v.Legs, v.DeliveredQoS)
	}
}

// TestLegsAgreeWithLost: the legs add up to lost, whatever the drain did:
// an unconfirmed QoS 0 loss is on neither leg for sure, and intents still
// on the broker when the drain gave up are lost on no leg, as in the totals.
func TestLegsAgreeWithLost(t *testing.T) {
	ev := func(typ history.Type, intent int, qos string) history.Event {
		return history.Event{Variant: "v", Type: typ, Intent: intent, QoS: qos}
	}
	base := []history.Event{
		ev(history.Publish, 1, ""), ev(history.PubFailed, 1, ""), ev(history.Deliver, 1, "0"), // applied
		ev(history.Publish, 2, ""), ev(history.PubFailed, 2, ""), // QoS 0, never delivered
		ev(history.Publish, 3, ""), ev(history.Confirm, 3, ""), // QoS 1, confirmed, never delivered
		ev(history.Publish, 4, ""), ev(history.Confirm, 4, ""), ev(history.Deliver, 4, "1"), // delivered, never applied
	}
	audit := map[string]history.Audit{"v": {Applied: map[int]int{1: 1}}}
	plan := check.Plan{Variants: []check.PlanVariant{{Name: "v", Strategy: "none"}}}
	for _, tc := range []struct {
		name    string
		drained bool
		lost    int
		legs    check.Legs
		byCause map[string]int
	}{
		{"drained", true, 3, check.Legs{Subscriber: check.LegCounts{Lost: 2}, UnconfirmedLost: 1},
			map[string]int{"unconfirmed": 1, "undelivered": 1, "unprocessed": 1}},
		{"drain gave up", false, 1, check.Legs{Subscriber: check.LegCounts{Lost: 1}},
			map[string]int{"unprocessed": 1}},
	} {
		events := append(append([]history.Event(nil), base...), history.Event{Variant: "v", Type: history.Drain, Drained: tc.drained})
		run, err := check.Judge(plan, check.Meta{}, history.Events(events), audit)
		if err != nil {
			t.Fatal(err)
		}
		v := run.Variants[0]
		if v.Lost != tc.lost || v.Legs == nil || *v.Legs != tc.legs || !maps.Equal(v.LostByCause, tc.byCause) {
			t.Errorf("%s: lost %d, legs %+v, lost_by_cause %v; want %d, %+v, %v", tc.name, v.Lost, v.Legs, v.LostByCause, tc.lost, tc.legs, tc.byCause)
		}
		if l := v.Legs; l != nil && l.Publisher.Lost+l.Subscriber.Lost+l.UnconfirmedLost != v.Lost {
			t.Errorf("%s: legs add up to %d lost, the totals say %d", tc.name, l.Publisher.Lost+l.Subscriber.Lost+l.UnconfirmedLost, v.Lost)
		}
	}
}
