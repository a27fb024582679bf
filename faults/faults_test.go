package faults

import (
	"testing"

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

// A consumer crash arms only where the strategy has its crash point, and
// records each injection with the delivery's attempt.
func TestConsumerCrashArmsWhereThePointExists(t *testing.T) {
	var fired []history.Event
	f := Fault{Name: "c", Type: catalog.ConsumerCrash, Schedule: Schedule{Seed: 1, Fault: "c", Every: 1},
		Params: &catalog.ConsumerCrashParams{At: catalog.BetweenDedupAndEffect}}
	none, _ := catalog.LookupStrategy("none")
	var crashes Crashes
	armed, err := Install(f, Env{Strategy: none, Crashes: &crashes, Fired: func(e history.Event) { fired = append(fired, e) }})
	if err != nil || armed {
		t.Fatalf("armed in a strategy without the point: %v, %v", armed, err)
	}
	split, _ := catalog.LookupStrategy("dedup-table-split")
	armed, err = Install(f, Env{Strategy: split, Crashes: &crashes, Fired: func(e history.Event) { fired = append(fired, e) }})
	if err != nil || !armed {
		t.Fatalf("not armed where the point exists: %v, %v", armed, err)
	}
	d := brokers.Delivery{Intent: 3, Attempt: 1}
	if crashes.At(catalog.AfterEffectBeforeAck, d, 1) != "" {
		t.Error("fired at another point")
	}
	if crashes.At(catalog.BetweenDedupAndEffect, d, 2) != catalog.ConsumerCrash {
		t.Fatal("did not fire at its point")
	}
	d.Attempt = 2
	if crashes.At(catalog.BetweenDedupAndEffect, d, 2) != "" {
		t.Error("fired past max_attempt")
	}
	if len(fired) != 1 || fired[0].Intent != 3 || fired[0].Consumer != 2 || fired[0].Point != string(catalog.BetweenDedupAndEffect) {
		t.Errorf("fired events = %+v", fired)
	}
}

// A broker-side fault on a destination without the power is an error.
func TestProduceResponseLostNeedsTheBroker(t *testing.T) {
	f := Fault{Name: "p", Type: catalog.ProduceResponseLost, Schedule: Schedule{Every: 2}}
	if _, err := Install(f, Env{Dest: nil}); err == nil {
		t.Error("armed on a destination that cannot lose produce responses")
	}
}
