package runner

import (
	"context"
	"testing"
	"time"
)

// TestPacer: intent i waits until (i-1)/rate after the start (a lower
// bound, which a slow machine cannot break), no pace never waits, and an
// ended run stops the wait.
func TestPacer(t *testing.T) {
	ctx := context.Background()
	p := newPacer(100) // 10 ms apart
	if !p.wait(ctx, 4) {
		t.Fatal("wait ended early")
	}
	if got := time.Since(p.start); got < 30*time.Millisecond {
		t.Errorf("intent 4 at rate 100/s went out %v after the start, want >= 30ms", got)
	}
	if !newPacer(0).wait(ctx, 1_000_000) {
		t.Error("no pace: wait said the run ended")
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if newPacer(1).wait(ended, 1000) {
		t.Error("an ended run: wait said go on")
	}
}

// TestLagLimit: the producer waits while max intents are published and not
// acked, goes on at the first ack that brings it under, goes on after the
// idle period when no ack comes (counting the outstanding ones given up),
// and stops when the run ends.
func TestLagLimit(t *testing.T) {
	ctx := context.Background()
	var f flow
	f.init(100)
	l := lagLimit{max: 3, idle: time.Hour, f: &f}
	for i := 1; i <= 3; i++ {
		if !l.wait(ctx, i) {
			t.Fatalf("intent %d: wait said the run ended", i)
		}
	}
	done := make(chan bool)
	go func() { done <- l.wait(ctx, 4) }()
	select {
	case <-done:
		t.Fatal("intent 4 went out with 3 intents outstanding and max_lag 3")
	case <-time.After(20 * time.Millisecond):
	}
	f.reached(2, doneEffect) // an effect is not an ack
	f.reached(2, doneAck)
	if !<-done {
		t.Fatal("intent 4: wait said the run ended")
	}
	f.reached(2, doneAck) // a second ack of the same intent does not count
	if got := f.acked.Load(); got != 1 {
		t.Errorf("acked = %d after two acks of one intent, want 1", got)
	}

	stalled := lagLimit{max: 2, idle: 10 * time.Millisecond, f: &f} // 1 acked of 4
	if !stalled.wait(ctx, 5) {
		t.Fatal("stalled: wait said the run ended")
	}
	if stalled.givenUp != 3 {
		t.Errorf("given up %d after the idle period with 3 outstanding, want 3", stalled.givenUp)
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if (&lagLimit{max: 1, idle: time.Hour, f: &f}).wait(ended, 50) {
		t.Error("an ended run: wait said go on")
	}
}
