package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dqbench/dqbench/brokers"
)

// flow is what the variant's deliveries have done so far, for the drain:
// which intents reached an ack or an effect, and how many deliveries are
// in a consumer's hands.
type flow struct {
	// progressed counts intents that reached an ack or an effect for the
	// first time, so the drain can tell a slow consumer from a stuck or
	// crash-looping one; inflight counts deliveries a consumer is
	// handling.
	progressed atomic.Int64
	inflight   atomic.Int64
	// down counts consumer slots without a subscribed instance: starting,
	// or between a crash (or a broken connection) and the replacement's
	// subscription. A broker may hold nothing for a slot while it is down
	// (an MQTT clean session) and deliver again once it subscribes (the
	// retained messages), so the drain waits for it.
	down atomic.Int64
	// acked counts intents acked for the first time; ackedCh gets a
	// signal each time (producer.max_lag waits on it).
	acked   atomic.Int64
	ackedCh chan struct{}
	mu      sync.Mutex
	done    []uint8 // by intent: doneAck, doneEffect
}

const (
	doneAck uint8 = 1 << iota
	doneEffect
)

// init readies f for intents 1..messages.
func (f *flow) init(messages int) {
	f.done = make([]uint8, messages+1)
	f.ackedCh = make(chan struct{}, 1)
}

// reached notes that intent reached an ack or an effect; the first time
// it does counts as progress.
func (f *flow) reached(intent int, what uint8) {
	if intent < 1 || intent >= len(f.done) {
		return
	}
	f.mu.Lock()
	first := f.done[intent]&what == 0
	f.done[intent] |= what
	f.mu.Unlock()
	if first {
		f.progressed.Add(1)
		if what == doneAck {
			f.acked.Add(1)
			select {
			case f.ackedCh <- struct{}{}:
			default:
			}
		}
	}
}

// idle: no consumer is handling a delivery and every slot has a
// subscribed instance (or has stopped). down is read first: a slot counts
// itself down before its delivery leaves flight.
func (f *flow) idle() bool {
	return f.down.Load() == 0 && f.inflight.Load() == 0
}

// drainEnd is how a drain ended.
type drainEnd struct {
	drained bool
	backlog int64
	why     string // why it gave up
	// looping: the failed intents still requeued in a loop when the drain
	// ended; starved: healthy messages were waiting behind them.
	looping []int
	starved bool
}

// drain waits until the broker holds nothing unconsumed and no consumer is
// handling a delivery, or until no intent has made progress (a first ack or
// a first effect) for the scenario's drain period: a slow machine only makes
// the drain longer; a stuck, starved or crash-looping consumer ends it.
func (r *variantRun) drain(ctx context.Context, dest brokers.Destination, consErr <-chan error) (drainEnd, error) {
	idle := r.s.Drain.D()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	last, lastChange := r.flow.progressed.Load(), time.Now()
	// least is the smallest backlog sampled since the last progress: a
	// broker's count may be high for a moment and is never low (a
	// RabbitMQ requeue in motion counts as ready), so one sample could
	// count a looping message twice and take the drain for starved.
	var backlog, least int64 = 0, -1
	for {
		n, berr := dest.Backlog(ctx)
		if berr == nil {
			backlog = n
			if least < 0 || n < least {
				least = n
			}
			if n == 0 && r.flow.idle() && !r.handBack.pending() {
				// Checked again after the in-flight count: a delivery
				// that finished in between may have been the last.
				if n, berr = dest.Backlog(ctx); berr == nil && n == 0 && r.flow.idle() {
					return drainEnd{drained: true}, nil
				}
			}
		}
		if now := r.flow.progressed.Load(); now != last {
			last, lastChange, least = now, time.Now(), -1
		} else if time.Since(lastChange) >= idle {
			if least >= 0 {
				backlog = least
			}
			return r.gaveUp(backlog, berr, idle), nil
		}
		select {
		case <-ctx.Done():
			return drainEnd{backlog: backlog}, ctx.Err()
		case err := <-consErr:
			return drainEnd{backlog: backlog}, err
		case <-tick.C:
		}
	}
}

// gaveUp is how a drain ends when no intent made progress for idle, with
// backlog messages on the broker (berr: why the broker did not say).
func (r *variantRun) gaveUp(backlog int64, berr error, idle time.Duration) drainEnd {
	if loop := r.handBack.looping(); berr == nil && len(loop) > 0 && backlog <= int64(len(loop)) {
		// What is left fails on every delivery and comes back (the
		// backlog may miss one in the middle of its requeue): the broker
		// has delivered everything it will ever deliver for the first
		// time.
		return drainEnd{drained: true, backlog: int64(len(loop)), looping: loop,
			why: fmt.Sprintf("%d poison messages left looping: each delivery fails and is requeued, and the queue has no delivery limit", len(loop))}
	}
	if loop := r.handBack.looping(); berr == nil && len(loop) > 0 {
		// More is waiting, but only the looping failed messages come:
		// they hold the consumers' prefetch (a classic queue requeues at
		// the head). A finding, not a failure.
		return drainEnd{backlog: backlog, looping: loop, starved: true,
			why: fmt.Sprintf("starved: %d messages waited behind %d poison messages that loop (each delivery fails and is requeued, the queue has no delivery limit) and made no progress in %s", backlog-int64(len(loop)), len(loop), idle)}
	}
	why := fmt.Sprintf("no intent was acked or applied for the first time in %s", idle)
	if berr != nil {
		why += fmt.Sprintf(" (the broker did not say what it still holds: %v)", berr)
	}
	return drainEnd{backlog: backlog, why: why}
}

// interruptBudget is what cleaning up and reading the store may take,
// in all, after Ctrl-C.
const interruptBudget = time.Second

// shutdown bounds the steps that end a variant (stopping clients,
// cleaning up on the broker, reading the store) by the run's hard
// deadline.
type shutdown struct {
	hard time.Time // the run's hard deadline: shutdown ends by then
	// interruptHard is when shutdown must end after Ctrl-C, set by the
	// first shutdown step that sees it.
	interruptOnce sync.Once
	interruptHard time.Time
}

// ctx bounds a shutdown step by the run's hard deadline; it is not
// cancelled with ctx, so a run cut short still cleans up and reads its
// store. After Ctrl-C (ctx cancelled, not past its deadline) every
// shutdown step together gets interruptBudget from the first one, so that
// a store or broker that stopped answering cannot hold one Ctrl-C up.
func (s *shutdown) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	hard := s.hard
	if errors.Is(ctx.Err(), context.Canceled) {
		s.interruptOnce.Do(func() { s.interruptHard = time.Now().Add(interruptBudget) })
		if hard.IsZero() || s.interruptHard.Before(hard) {
			hard = s.interruptHard
		}
	}
	if hard.IsZero() || time.Until(hard) < 200*time.Millisecond {
		hard = time.Now().Add(200 * time.Millisecond) // past the deadline: a last short chance
	}
	return context.WithDeadline(context.WithoutCancel(ctx), hard)
}
