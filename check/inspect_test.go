package check_test

import (
	"strings"
	"testing"
	"time"

	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/history"
)

// TestInspect: every anomalous intent is listed with its cause, the causes
// add up to the counts, the sample keeps the lowest ids, and an intent the
// counts call clean is OK.
func TestInspect(t *testing.T) {
	events := join(
		clean(1),
		// 2: applied, redelivered before its ack, applied again.
		published(2), one(delivered(2, 2), effect(2, true), delivered(2, 2), effect(2, true), ev(history.Ack, 2)),
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

// TestInspectAckedRedelivered: a duplicate whose redelivery came after the
// consumer had acked it is acked-redelivered (the broker had not applied
// the ack: a quorum queue's pending settles, rabbitmq-server #10327), and
// the notes say so, also when a consumer crash hit an earlier delivery of
// it; one redelivered before any ack, or whose ack a fault lost on purpose
// (ack-lost names the intent), stays redelivered.
func TestInspectAckedRedelivered(t *testing.T) {
	crashBefore := func(intent int) history.Event {
		e := ev(history.Fault, intent)
		e.Fault, e.Point, e.Consumer, e.Attempt = "consumer-crash", "before-process", 1, 1
		return e
	}
	lostAck := ev(history.Fault, 3)
	lostAck.Fault = "ack-lost"
	events := join(
		// 1: applied, acked, delivered again, applied again.
		clean(1), one(delivered(1, 1), effect(1, true), ev(history.Ack, 1)),
		// 2: applied, the consumer died before the ack: redelivered.
		published(2), one(delivered(2, 2), effect(2, true), delivered(2, 2), effect(2, true), ev(history.Ack, 2)),
		// 3: acked, the fault lost the ack: the fault's redelivery.
		clean(3), one(lostAck, delivered(3, 3), effect(3, true), ev(history.Ack, 3)),
		// 4: acked, delivered again, recognised: no duplicate.
		clean(4), one(delivered(4, 4), effect(4, false), ev(history.Ack, 4)),
		// 5: a consumer crash before processing its first delivery, then
		// applied and acked by the replacement, whose own crash the
		// queue had not applied that ack by: delivered a third time and
		// applied again. The crash explains the second delivery, not the
		// third.
		published(5), one(delivered(5, 5), crashBefore(5), delivered(5, 5), effect(5, true), ev(history.Ack, 5),
			delivered(5, 5), effect(5, true), ev(history.Ack, 5)),
		one(history.Event{Variant: "v", Type: history.Drain, Drained: true}),
	)
	audit := applied(map[int]int{1: 2, 2: 2, 3: 2, 4: 1, 5: 2})
	plan := check.Plan{Broker: catalog.RabbitMQ, Variants: []check.PlanVariant{{Name: "v", Strategy: "none"}}}
	in, err := check.Inspect(plan, check.Meta{}, history.Events(events), map[string]history.Audit{"v": audit})
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[int]check.Cause{1: check.DupAckedAgain, 2: check.DupRedelivered, 3: check.DupRedelivered, 4: "", 5: check.DupAckedAgain} {
		if got := in.Intent("v", id).Cause; got != want {
			t.Errorf("intent %d: cause %q, want %q", id, got, want)
		}
	}
	v := in.Variants[0]
	if v.Duplicates != 4 {
		t.Errorf("duplicates = %d, want 4", v.Duplicates)
	}
	want := "2 of them were delivered again after the consumer had acked them (acked-redelivered): acked, but the queue had not applied the ack when the consumer went away"
	found := false
	for _, n := range v.Notes {
		found = found || strings.HasPrefix(n, want)
	}
	if !found {
		t.Errorf("no note %q in %q", want, v.Notes)
	}
}

// TestInspectQoS2Violations: at QoS 2 a second stored copy is the
// publishing client's violation (MQTT-4.3.3-1), and the same copy applied
// again after a lost subscriber PUBREC the subscribing client's
// (MQTT-4.3.3-2); at QoS 1 the same histories keep the generic causes.
func TestInspectQoS2Violations(t *testing.T) {
	for _, qos := range []string{"2", "1"} {
		d := func(intent int, pos string) history.Event {
			return history.Event{Variant: "v", Type: history.Deliver, Intent: intent, Position: pos, QoS: qos}
		}
		events := join(published(1), published(2), one(
			d(1, "c1/1"), effect(1, true), d(1, "c1/2"), effect(1, true),
			history.Event{Variant: "v", Type: history.Fault, Fault: "sub-PUBREC", Point: "PUBREC/subscriber", Packet: "PUBREC", Leg: "subscriber", Intent: 2},
			d(2, "c1/3"), effect(2, true), d(2, "c1/3"), effect(2, true),
		))
		plan := check.Plan{Broker: catalog.MQTT, Variants: []check.PlanVariant{{Name: "v", Strategy: "none"}}}
		in, err := check.Inspect(plan, check.Meta{}, history.Events(events), map[string]history.Audit{"v": {Applied: map[int]int{1: 2, 2: 2}}})
		if err != nil {
			t.Fatal(err)
		}
		want := map[int]check.Cause{1: check.DupQoS2Resent, 2: check.DupQoS2Redeliver}
		if qos == "1" {
			want = map[int]check.Cause{1: check.DupStoredTwice, 2: check.DupRedelivered}
		}
		for id, c := range want {
			if got := in.Intent("v", id); got.Cause != c {
				t.Errorf("QoS %s, intent %d: cause %s, want %s", qos, id, got.Cause, c)
			}
		}
		// A copy stored twice at QoS 2 is the client's resend, not the
		// broker's QoS 1 one.
		if notes := strings.Join(in.Variants[0].Notes, "\n"); strings.Contains(notes, "QoS 1 resend") != (qos == "1") {
			t.Errorf("QoS %s: notes:\n%s", qos, notes)
		}
	}
}

// TestInspectRetainedAgain: an MQTT delivery flagged retained (the broker
// sent the retained message to a new subscription) that applies again is
// retained-again, on the subscriber leg, not a copy stored twice, though
// its position differs from the first delivery's.
func TestInspectRetainedAgain(t *testing.T) {
	again := delivered(1, 9)
	again.Retained, again.QoS = true, "1"
	first := delivered(1, 1)
	first.QoS = "1"
	events := join(
		clean(1), one(first, effect(1, true), ev(history.Ack, 1), again, effect(1, true), ev(history.Ack, 1)),
		one(history.Event{Variant: "v", Type: history.Drain, Drained: true}),
	)
	plan := check.Plan{Variants: []check.PlanVariant{{Name: "v", Strategy: "none"}}}
	in, err := check.Inspect(plan, check.Meta{}, history.Events(events), map[string]history.Audit{"v": applied(map[int]int{1: 2})})
	if err != nil {
		t.Fatal(err)
	}
	if got := in.Intent("v", 1).Cause; got != check.DupRetained {
		t.Errorf("cause %q, want %q", got, check.DupRetained)
	}
	v := in.Variants[0]
	if v.Duplicates != 1 || v.Legs == nil || v.Legs.Subscriber.Duplicates != 1 || v.Legs.Publisher.Duplicates != 0 {
		t.Errorf("duplicates %d, legs %+v; want 1, on the subscriber leg", v.Duplicates, v.Legs)
	}
	for _, n := range v.Notes {
		if strings.Contains(n, "stored more than once") {
			t.Errorf("note %q: a retained message sent again is not stored twice", n)
		}
	}
}
