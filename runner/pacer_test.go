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
