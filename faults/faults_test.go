package faults

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/history"
)

func TestEvery(t *testing.T) {
	s := Schedule{Seed: 3, Fault: "f", Every: 10}
	hits := 0
	for intent := 1; intent <= 1000; intent++ {
		if s.Fires(intent, 1) {
			hits++
		}
		if s.Fires(intent, 2) {
			t.Fatalf("intent %d: fired on attempt 2 with max_attempt 1", intent)
		}
	}
	if hits != 100 {
		t.Errorf("every 10 over 1000 intents: %d hits, want 100", hits)
	}
}

func TestProbabilityIsSeededAndPerIntent(t *testing.T) {
	a := Schedule{Seed: 7, Fault: "crash", Probability: 0.05, MaxAttempt: 3}
	b := a
	other := a
	other.Seed = 8
	hits, same, diff := 0, true, false
	for intent := 1; intent <= 20000; intent++ {
		for attempt := 1; attempt <= 3; attempt++ {
			fa := a.Fires(intent, attempt)
			same = same && fa == b.Fires(intent, attempt)
			diff = diff || fa != other.Fires(intent, attempt)
			if fa {
				hits++
			}
		}
	}
	if !same {
		t.Error("the same schedule decided differently twice")
	}
	if !diff {
		t.Error("another seed made exactly the same decisions")
	}
	// 60000 decisions at p=0.05: expect 3000, far outside ±300 is broken.
	if hits < 2700 || hits > 3300 {
		t.Errorf("p=0.05 over 60000 decisions: %d hits", hits)
	}
}

func TestFaultNameChangesTheSchedule(t *testing.T) {
	a := Schedule{Seed: 1, Fault: "a", Probability: 0.5}
	b := Schedule{Seed: 1, Fault: "b", Probability: 0.5}
	for intent := 1; intent <= 100; intent++ {
		if a.Fires(intent, 1) != b.Fires(intent, 1) {
			return
		}
	}
	t.Error("two faults with different names fire on the same intents")
}

// Every fault type in the catalog has an implementation, and no other.
func TestEveryCatalogFaultIsImplemented(t *testing.T) {
	for _, k := range catalog.Faults {
		if All[k.Type] == nil {
			t.Errorf("fault type %s has no implementation in faults.All", k.Type)
		}
	}
	if len(All) != len(catalog.Faults) {
		t.Errorf("faults.All has %d implementations for %d catalog fault types", len(All), len(catalog.Faults))
	}
}

// kinds lists what c says at p for d, acting out nothing.
func kinds(c *Consumer, p catalog.CrashPoint, d brokers.Delivery, consumer int) []ActionKind {
	var out []ActionKind
	for a := range c.At(context.Background(), p, d, consumer) {
		out = append(out, a.Kind)
	}
	return out
}

// A consumer crash arms only where the strategy has its crash point, and
// records each injection with the delivery's attempt.
func TestConsumerCrashArmsWhereThePointExists(t *testing.T) {
	var fired []history.Event
	f := Fault{Name: "c", Type: catalog.ConsumerCrash, Schedule: Schedule{Seed: 1, Fault: "c", Every: 1},
		Params: &catalog.ConsumerCrashParams{At: catalog.BetweenDedupAndEffect}}
	none, _ := catalog.LookupStrategy("none")
	var c Consumer
	armed, err := Install(f, Env{Strategy: none, Consumer: &c, Fired: func(e history.Event) { fired = append(fired, e) }})
	if err != nil || armed {
		t.Fatalf("armed in a strategy without the point: %v, %v", armed, err)
	}
	split, _ := catalog.LookupStrategy("dedup-table-split")
	armed, err = Install(f, Env{Strategy: split, Consumer: &c, Fired: func(e history.Event) { fired = append(fired, e) }})
	if err != nil || !armed {
		t.Fatalf("not armed where the point exists: %v, %v", armed, err)
	}
	d := brokers.Delivery{Intent: 3, Attempt: 1}
	if got := kinds(&c, catalog.AfterEffectBeforeAck, d, 1); len(got) != 0 {
		t.Errorf("at another point: %v, want nothing", got)
	}
	if got := kinds(&c, catalog.BetweenDedupAndEffect, d, 2); !slices.Equal(got, []ActionKind{Settle, SyncAcks, Crash}) {
		t.Fatalf("at its point: %v, want settle, sync acks, crash", got)
	}
	d.Attempt = 2
	if got := kinds(&c, catalog.BetweenDedupAndEffect, d, 2); !slices.Equal(got, []ActionKind{Passed}) {
		t.Errorf("past max_attempt: %v, want settle, passed", got)
	}
	if len(fired) != 1 || fired[0].Intent != 3 || fired[0].Consumer != 2 || fired[0].Point != string(catalog.BetweenDedupAndEffect) {
		t.Errorf("fired events = %+v", fired)
	}
}

// What hits a delivery as it arrives comes after before-process's crash
// faults, in a fixed order whatever the order of arming; each is decided
// and recorded only when the loop asks for the next action, and a poison
// message fails on every delivery.
func TestArrivalFaultsInOrder(t *testing.T) {
	var fired []string
	env := Env{Consumer: &Consumer{}, Fired: func(e history.Event) { fired = append(fired, e.Fault) }}
	every := Schedule{Every: 1}
	for _, f := range []Fault{
		{Name: "poison", Type: catalog.PoisonMessage, Schedule: every},
		{Name: "cut", Type: catalog.Partition, Schedule: every, Params: &catalog.PartitionParams{}},
		{Name: "slow", Type: catalog.Latency, Schedule: every, Params: &catalog.LatencyParams{}},
		{Name: "zombie", Type: catalog.ConsumerZombie, Schedule: every, Params: &catalog.ConsumerCrashParams{At: catalog.BeforeProcess}},
	} {
		if armed, err := Install(f, env); err != nil || !armed {
			t.Fatalf("%s: armed %v, %v", f.Name, armed, err)
		}
	}
	d := brokers.Delivery{Intent: 1, Attempt: 1}
	want := []ActionKind{Settle, SyncAcks, Zombie, Slow, Partition, Fail}
	if got := kinds(env.Consumer, catalog.BeforeProcess, d, 1); !slices.Equal(got, want) {
		t.Errorf("actions %v, want %v", got, want)
	}
	if want := []string{"zombie", "slow", "cut", "poison"}; !slices.Equal(fired, want) {
		t.Errorf("recorded %v, want %v", fired, want)
	}
	// A loop that stops at the partition leaves the poison undecided.
	fired = nil
	for a := range env.Consumer.At(context.Background(), catalog.BeforeProcess, d, 1) {
		if a.Kind == Partition {
			break
		}
	}
	if want := []string{"zombie", "slow", "cut"}; !slices.Equal(fired, want) {
		t.Errorf("recorded %v when the loop stopped at the partition, want %v", fired, want)
	}
	fired = nil
	d.Attempt = 5
	if got := kinds(env.Consumer, catalog.BeforeProcess, d, 1); !slices.Equal(got, []ActionKind{Passed, Fail}) {
		t.Errorf("fifth delivery: %v, want settle, passed, fail (poison fails every time)", got)
	}
}

// A broker-side fault on a destination without the power is an error.
func TestProduceResponseLostNeedsTheBroker(t *testing.T) {
	f := Fault{Name: "p", Type: catalog.ProduceResponseLost, Schedule: Schedule{Every: 2}}
	if _, err := Install(f, Env{Dest: nil}); err == nil {
		t.Error("armed on a destination that cannot lose produce responses")
	}
}

// slowDest is a destination whose consumers must ack within an ack
// deadline (nowhere: they do not ack).
type slowDest struct {
	brokers.Destination
	nowhere bool
}

func (d slowDest) Apply(_ context.Context, p brokers.Power) error {
	ad, ok := p.(brokers.AckDeadline)
	switch {
	case !ok:
		return brokers.NoPower(p)
	case d.nowhere:
		return brokers.ErrNowhere
	}
	ad.Got(time.Second)
	return nil
}

// TestSlowProcessing: slow-processing asks the loop to overrun at its
// crash point, for a bound past the broker's ack deadline, on the
// scheduled delivery only; with no ack deadline (ack: auto) it is not
// armed, and a broker without one is an error.
func TestSlowProcessing(t *testing.T) {
	var fired []history.Event
	none, _ := catalog.LookupStrategy("none")
	f := Fault{Name: "slow", Type: catalog.SlowProcessing, Schedule: Schedule{Every: 1}, Params: &catalog.SlowProcessingParams{At: catalog.AfterEffectBeforeAck}}
	env := Env{Dest: slowDest{}, Strategy: none, Consumer: &Consumer{}, Fired: func(e history.Event) { fired = append(fired, e) }}
	if armed, err := Install(f, env); err != nil || !armed {
		t.Fatalf("armed %v, %v", armed, err)
	}
	d := brokers.Delivery{Intent: 4, Attempt: 1}
	var got []Action
	for a := range env.Consumer.At(context.Background(), catalog.AfterEffectBeforeAck, d, 1) {
		got = append(got, a)
	}
	if len(got) != 3 || got[2].Kind != Overrun || got[2].For <= time.Second {
		t.Fatalf("actions %+v, want settle, sync acks, overrun for more than the 1s deadline", got)
	}
	if len(fired) != 1 || fired[0].Intent != 4 || !strings.Contains(fired[0].Reason, "past ack_wait (1s)") {
		t.Errorf("fired %+v", fired)
	}
	d.Attempt = 2
	if got := kinds(env.Consumer, catalog.AfterEffectBeforeAck, d, 2); !slices.Equal(got, []ActionKind{Passed}) {
		t.Errorf("the redelivery: %v, want settle, passed (it wakes the slow one)", got)
	}
	env.Dest, env.Consumer = slowDest{nowhere: true}, &Consumer{}
	if armed, err := Install(f, env); err != nil || armed {
		t.Errorf("with no ack deadline: armed %v, %v; want not armed", armed, err)
	}
	env.Dest = nil
	if _, err := Install(f, env); err == nil {
		t.Error("armed on a destination without an ack deadline")
	}
}
