package runner

import (
	"context"
	"fmt"
	"slices"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/history"
)

// Failed processing and the dead-letter queue.
//
// A delivery whose processing a fault fails is recorded as an effect refused
// (Rejected, with the reason) and handed back to the broker as the
// consumer's on_failure says: requeued, it comes back, and loops unless
// the queue's delivery_limit dead-letters it; rejected, the broker
// dead-letters it at once. The runner reads the dead-letter queue and
// records a dead-letter event for each message in it.

// fail handles a delivery whose processing failed (why: the effect
// event's reason): it records the refused effect and hands the delivery
// back. With the ack before processing the broker has forgotten it
// already.
func (r *variantRun) fail(ctx context.Context, h *delivery, why string) error {
	c, d := h.c, h.d
	r.rec.Record(history.Event{Type: history.Effect, Intent: d.Intent, Attempt: d.Attempt, Consumer: c.Gen(), Rejected: true, Reason: why})
	r.progressOn(d.Intent, doneEffect)
	if h.ackFirst {
		r.inflight.Add(-1)
		return nil
	}
	if err := h.pending.wait(); err != nil {
		return err
	}
	requeue := r.s.ConsumerFor(r.v).OnFailure != catalog.FailReject
	// Noted before the broker has it: the dead-letter reader may see the
	// message before Nack returns.
	r.mu.Lock()
	if r.looping == nil {
		r.looping = map[int]bool{}
	}
	r.looping[d.Intent] = requeue
	r.mu.Unlock()
	if err := c.Nack(ctx, d, requeue); err != nil {
		return fmt.Errorf("hand back intent %d: %w", d.Intent, err)
	}
	r.inflight.Add(-1)
	return nil
}

// readDeadLetters records every message the broker dead-letters, until ctx
// ends.
func (r *variantRun) readDeadLetters(ctx context.Context, dest brokers.Destination) error {
	dl, ok := dest.(brokers.DeadLetterer)
	if !ok {
		return nil
	}
	c, err := dl.DeadLetters(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer func() {
		sctx, cancel := r.shutdownCtx(ctx)
		defer cancel()
		c.Close(sctx)
	}()
	for {
		d, err := c.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("dead-letter queue: %w", err)
		}
		r.rec.Record(history.Event{Type: history.DeadLetter, Intent: d.Intent, Position: d.Position})
		r.mu.Lock()
		delete(r.looping, d.Intent)
		r.mu.Unlock()
		if err := c.Ack(ctx, d); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("dead-letter queue: %w", err)
		}
		r.progressOn(d.Intent, doneAck)
	}
}

// handedBack reports whether a failed delivery was handed back and not
// seen in the dead-letter queue since: requeued, or refused and on its
// way there. The broker moves such a message between its counts
// (unacked, ready, dead-lettered) asynchronously, so Backlog can miss it
// for a moment; the drain does not end on a zero backlog meanwhile.
func (r *variantRun) handedBack() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.looping) > 0
}

// loopingIntents lists the intents requeued after their last failed
// processing and not dead-lettered since: with no delivery limit they stay
// on the broker for good.
func (r *variantRun) loopingIntents() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int
	for intent, requeued := range r.looping {
		if requeued {
			out = append(out, intent)
		}
	}
	slices.Sort(out)
	return out
}
