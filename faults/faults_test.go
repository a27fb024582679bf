package faults

import "testing"

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

func TestLookup(t *testing.T) {
	for _, k := range All {
		if got, ok := Lookup(k.Name); !ok || got.Name != k.Name {
			t.Errorf("Lookup(%q) = %v, %v", k.Name, got, ok)
		}
	}
	if _, ok := Lookup("nope"); ok {
		t.Error("Lookup found an unknown fault")
	}
}
