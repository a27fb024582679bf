package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

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
	mode := r.onFailure()
	requeue := !mode.DeadLetters()
	if !requeue && r.s.Broker.Kind == catalog.RabbitMQ {
		// basic.reject to the dead-letter exchange: a hop nobody
		// confirms (on NATS a term has no such hop: the server gives
		// the message up and says so in an advisory).
		r.rec.Record(history.Event{Type: history.Reject, Intent: d.Intent, Attempt: d.Attempt, Consumer: c.Gen(), Reason: deadLetterTarget(mode, cons.RabbitMQConsumer)})
	}
	// Noted before the broker has it: the dead-letter reader may see the
	// message, or the wait queue may give it back, before Nack returns.
	// A refused one with no queue to reach (dead_letter_queue: false) is
	// dropped by the broker: there is nothing to wait for. One sent to a
	// bounded queue may be dropped too: it is waited for a while.
	switch {
	case requeue:
		r.handBack.note(d.Intent, true, 0)
	case !cons.HasDeadLetterQueue():
	case cons.DeadLetterMaxLength == 0:
		r.handBack.note(d.Intent, false, 0)
	case mode == catalog.FailRetryQueue:
		r.handBack.note(d.Intent, false, cons.Delay().D()+arrival)
	default:
		r.handBack.note(d.Intent, false, arrival)
	}
	if err := c.Nack(ctx, d, requeue); err != nil {
		return fmt.Errorf("hand back intent %d: %w", d.Intent, err)
	}
	r.flow.inflight.Add(-1)
	return nil
}

// deadLetterTarget says where the queue's dead-letter exchange routes what
// the consumer rejects, for the reject event.
func deadLetterTarget(mode catalog.FailureMode, cons catalog.RabbitMQConsumer) string {
	where := "the dead-letter queue"
	if mode == catalog.FailRetryQueue {
		where = fmt.Sprintf("the wait queue (retry_delay %s)", cons.Delay())
	}
	if !cons.HasDeadLetterQueue() {
		where += ", which is not declared (dead_letter_queue: false)"
	}
	if n := cons.DeadLetterMaxLength; n > 0 && cons.HasDeadLetterQueue() {
		overflow := cons.DeadLetterOverflow
		if overflow == "" {
			overflow = catalog.DropHead
		}
		where += fmt.Sprintf(", which holds at most %d (%s)", n, overflow)
	}
	return where
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
// seen in the dead-letter queue (or, from a wait queue, delivered again)
// since, by intent.
type handBacks struct {
	mu     sync.Mutex
	handed map[int]handBack
}

// handBack is one failed delivery handed back: requeued, or rejected to
// the dead-letter exchange, which confirms nothing. A rejected one sent to
// a bounded queue (dead_letter_max_length) may be dropped there: not seen
// by until, it is taken for dropped when nothing else is left; until is
// zero where the target keeps everything.
type handBack struct {
	requeue bool
	until   time.Time
}

// arrival bounds how long a dead-lettered message takes from a reject to
// its target queue (past the wait of a retry queue): the drain waits that
// long for one sent to a bounded queue that it has not seen arrive.
const arrival = time.Second

// note notes that intent was handed back (requeue: to be delivered again;
// else rejected to the dead-letter exchange), to be waited for at most
// wait when it is not 0.
func (h *handBacks) note(intent int, requeue bool, wait time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.handed == nil {
		h.handed = map[int]handBack{}
	}
	b := handBack{requeue: requeue}
	if wait > 0 {
		b.until = time.Now().Add(wait)
	}
	h.handed[intent] = b
}

// deadLettered notes that intent reached the dead-letter queue.
func (h *handBacks) deadLettered(intent int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.handed, intent)
}

// delivered notes a delivery of intent: one rejected to a wait queue has
// come back.
func (h *handBacks) delivered(intent int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if b, ok := h.handed[intent]; ok && !b.requeue {
		delete(h.handed, intent)
	}
}

// settled notes that a delivery of intent was acked: the broker holds it
// no more, whatever an earlier failure handed back (a transient failure
// requeued it, and it succeeded since), so it is neither pending nor
// looping.
func (h *handBacks) settled(intent int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.handed, intent)
}

// pending reports whether a failed delivery was handed back and not seen
// in the dead-letter queue (or again) since: requeued, or rejected and on
// its way to its target queue (or back from it). The broker moves such a
// message between its counts (unacked, ready, dead-lettered)
// asynchronously, so Backlog can miss it for a moment; the drain does not
// end on a zero backlog meanwhile. A rejected one sent to a bounded
// queue and not seen by its time is not waited for: the broker dropped it.
func (h *handBacks) pending() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	for _, b := range h.handed {
		if b.requeue || b.until.IsZero() || now.Before(b.until) {
			return true
		}
	}
	return false
}

// looping lists the intents requeued after their last failed processing
// and not dead-lettered since: with no delivery limit they stay on the
// broker for good.
func (h *handBacks) looping() []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []int
	for intent, b := range h.handed {
		if b.requeue {
			out = append(out, intent)
		}
	}
	slices.Sort(out)
	return out
}
