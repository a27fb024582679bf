package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

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
//
// A transient failure (fail-once) is only the fault event: the delivery is
// handed back the same way, or, with on_failure retry-in-process,
// processed again at once (errRetry); what the processing wrote before it
// failed stays written either way.

// fail handles a delivery whose processing failed (why: the effect
// event's reason): it records the refused effect and hands the delivery
// back. With the ack before processing the broker has forgotten it
// already.
func (r *variantRun) fail(ctx context.Context, h *delivery, why string) error {
	c, d := h.c, h.d
	r.rec.Record(history.Event{Type: history.Effect, Intent: d.Intent, Attempt: d.Attempt, Consumer: c.Gen(), Rejected: true, Reason: why})
	return r.giveBack(ctx, h)
}

// errRetry ends a processing that failed (fail-once) when the consumer
// runs it again at once (on_failure: retry-in-process).
var errRetry = errors.New("processing failed: retried in process")

// failTransient handles a delivery whose processing failed this time
// (fail-once) as the consumer's on_failure says: retried in process
// (errRetry) or handed back (errHandedBack).
func (r *variantRun) failTransient(ctx context.Context, h *delivery) error {
	if r.onFailure() == catalog.FailRetryInProcess {
		return errRetry
	}
	if err := r.giveBack(ctx, h); err != nil {
		return err
	}
	return errHandedBack
}

// onFailure is the variant's on_failure: by default requeue where the
// broker takes deliveries back, else retry-in-process.
func (r *variantRun) onFailure() catalog.FailureMode {
	if m := r.s.ConsumerFor(r.v).OnFailure; m != "" {
		return m
	}
	if b, _ := catalog.LookupBroker(r.s.Broker.Kind); b.DeadLetter {
		return catalog.FailRequeue
	}
	return catalog.FailRetryInProcess
}

// giveBack hands a delivery whose processing failed back to the broker, as
// on_failure says. With the ack before processing the broker has
// forgotten it already.
func (r *variantRun) giveBack(ctx context.Context, h *delivery) error {
	c, d := h.c, h.d
	r.flow.reached(d.Intent, doneEffect)
	if h.ackFirst {
		r.flow.inflight.Add(-1)
		return nil
	}
	if err := h.pending.wait(); err != nil {
		return err
	}
	cons := r.s.ConsumerFor(r.v)
	requeue := r.onFailure() != catalog.FailReject
	// Noted before the broker has it: the dead-letter reader may see the
	// message before Nack returns. A refused one with no dead-letter queue
	// to reach (dead_letter_queue: false) is dropped by the broker: there
	// is nothing to wait for.
	if requeue || cons.HasDeadLetterQueue() {
		r.handBack.note(d.Intent, requeue)
	}
	if err := c.Nack(ctx, d, requeue); err != nil {
		return fmt.Errorf("hand back intent %d: %w", d.Intent, err)
	}
	r.flow.inflight.Add(-1)
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
		if ctx.Err() != nil || errors.Is(err, brokers.ErrNowhere) {
			return nil
		}
		return err
	}
	defer func() {
		sctx, cancel := r.shutdown.ctx(ctx)
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
		r.handBack.deadLettered(d.Intent)
		if err := c.Ack(ctx, d); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("dead-letter queue: %w", err)
		}
		r.flow.reached(d.Intent, doneAck)
	}
}

// handBacks are the failed deliveries handed back to the broker and not
// seen in the dead-letter queue since, by intent: requeued (true) or
// refused.
type handBacks struct {
	mu     sync.Mutex
	handed map[int]bool
}

// note notes that intent was handed back (requeue: to be delivered again).
func (h *handBacks) note(intent int, requeue bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.handed == nil {
		h.handed = map[int]bool{}
	}
	h.handed[intent] = requeue
}

// deadLettered notes that intent reached the dead-letter queue.
func (h *handBacks) deadLettered(intent int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.handed, intent)
}

// pending reports whether a failed delivery was handed back and not seen
// in the dead-letter queue since: requeued, or refused and on its way
// there. The broker moves such a message between its counts (unacked,
// ready, dead-lettered) asynchronously, so Backlog can miss it for a
// moment; the drain does not end on a zero backlog meanwhile.
func (h *handBacks) pending() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.handed) > 0
}

// looping lists the intents requeued after their last failed processing
// and not dead-lettered since: with no delivery limit they stay on the
// broker for good.
func (h *handBacks) looping() []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []int
	for intent, requeued := range h.handed {
		if requeued {
			out = append(out, intent)
		}
	}
	slices.Sort(out)
	return out
}
