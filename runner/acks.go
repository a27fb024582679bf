package runner

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/recording"
)

// pendingAck is what a consumer instance has settled and not yet had
// acked: acks run in the background, and until one is done its delivery
// still counts as in flight. Anything that depends on them (a crash point
// where a fault is armed, the end of the instance) waits for them all.
//
// By default one ack is in flight at a time: the next delivery's ack
// waits for it. A consumer whose ack also acks the deliveries before it
// (a Kafka offset commit, brokers.BatchAcker) that is its variant's only
// instance batches instead: what is settled while a commit is in flight
// goes out together in the next one, at most one request every ackPace,
// so a broker slower to commit than the store is to apply no longer holds
// each delivery up, nor takes the CPU the store needs. Only one
// instance: with several, a rebalance that moves a partition waits for
// the acks of what the old owner handed over (brokers/kafka's revoke
// handover), and a queue of them would hold it up longer than one ack in
// flight.
type pendingAck struct {
	done  chan error  // the single ack in flight
	batch *ackBatcher // nil: one ack at a time
}

// newPendingAck readies the acks of instance c.
func (r *variantRun) newPendingAck(ctx context.Context, c *recording.Consumer, ackFirst bool) *pendingAck {
	p := &pendingAck{}
	if !ackFirst && c.BatchAcks() && r.s.ConsumerFor(r.v).Instances == 1 {
		p.batch = &ackBatcher{ctx: ctx, r: r, c: c, pace: ackPace, hurry: make(chan struct{}, 1)}
		p.batch.idle = sync.NewCond(&p.batch.mu)
	}
	return p
}

// start acks d in the background, taking over d's in-flight count; one at
// a time: the previous ack must have been waited for (beforeNext).
func (p *pendingAck) start(ctx context.Context, r *variantRun, c *recording.Consumer, d brokers.Delivery) {
	if p.batch != nil {
		p.batch.add(d)
		return
	}
	p.done = make(chan error, 1)
	go func() {
		err := r.ack(ctx, c, d)
		r.flow.inflight.Add(-1)
		p.done <- err
	}()
}

// beforeNext is what the next ack waits for: the ack in flight, one at a
// time; batching, nothing (only an earlier failure ends the instance).
func (p *pendingAck) beforeNext() error {
	if p.batch != nil {
		return p.batch.failed()
	}
	return p.wait()
}

// wait waits for every ack in flight or queued.
func (p *pendingAck) wait() error {
	if p.batch != nil {
		return p.batch.wait()
	}
	if p.done == nil {
		return nil
	}
	err := <-p.done
	p.done = nil
	return err
}

// ackBatcher sends the acks of one instance in batches: one request in
// flight, and what was settled meanwhile in the next.
type ackBatcher struct {
	ctx context.Context
	r   *variantRun
	c   *recording.Consumer

	mu      sync.Mutex
	idle    *sync.Cond // signalled when running ends
	queued  []brokers.Delivery
	running bool
	err     error // the first failed request; later ones are not sent

	// pace is the least time from one request's start to the next's
	// (0: none); hurry cuts the pause short when something waits for the
	// acks. sent is when the last request began (run's goroutine only).
	pace  time.Duration
	hurry chan struct{}
	sent  time.Time
}

// ackPace is how long a batch gathers at least. Without it a consumer of
// embedded Kafka sent a commit request per 1.8 deliveries (10,998 for
// 20,000), whose handling in kgo and kfake, on the other core of two,
// slowed the consumer's store transactions; with 2 ms, one per 32.5 (615).
// A crash point where a fault is armed, and the end of the instance, wait
// for the acks and cut the pause short: what they need of the broker is
// unchanged.
const ackPace = 2 * time.Millisecond

func (b *ackBatcher) add(d brokers.Delivery) {
	b.mu.Lock()
	b.queued = append(b.queued, d)
	start := !b.running
	b.running = true
	b.mu.Unlock()
	if start {
		go b.run()
	}
}

// run sends what is queued, batch after batch, until nothing is; a batch
// gathers until the pace since the last request has passed.
func (b *ackBatcher) run() {
	for {
		if b.stop() {
			return
		}
		b.pause()
		b.mu.Lock()
		ds := b.queued
		b.queued = nil
		b.mu.Unlock()
		b.sent = time.Now()
		err := b.r.ackBatch(b.ctx, b.c, ds)
		b.r.flow.inflight.Add(-int64(len(ds)))
		if err != nil {
			b.mu.Lock()
			b.err = err
			b.mu.Unlock()
		}
	}
}

// stop ends the run when nothing is queued, or after a failed request
// (what is queued then is not sent, and leaves flight).
func (b *ackBatcher) stop() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queued) > 0 && b.err == nil {
		return false
	}
	b.r.flow.inflight.Add(-int64(len(b.queued)))
	b.queued = nil
	b.running = false
	b.idle.Broadcast()
	return true
}

// pause waits until pace has passed since the last request began, or
// something waits for the acks, or the instance's context ends.
func (b *ackBatcher) pause() {
	d := b.pace - time.Since(b.sent)
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-b.hurry:
	case <-b.ctx.Done():
	}
}

// wait waits until every queued ack is sent; the first failure, if any.
func (b *ackBatcher) wait() error {
	// A token left when no pause was under way only spares the next
	// batch its pause.
	select {
	case b.hurry <- struct{}{}:
	default:
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.running {
		b.idle.Wait()
	}
	return b.err
}

func (b *ackBatcher) failed() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// ackBatch acks ds in one request (brokers.BatchAcker).
func (r *variantRun) ackBatch(ctx context.Context, c *recording.Consumer, ds []brokers.Delivery) error {
	if err := c.AckBatch(ctx, ds); err != nil {
		return fmt.Errorf("ack intents %d to %d: %w", ds[0].Intent, ds[len(ds)-1].Intent, err)
	}
	r.progress.consumed(r.counts, len(ds))
	for _, d := range ds {
		r.flow.reached(d.Intent, doneAck)
		r.handBack.settled(d.Intent)
	}
	r.progress.heardFrom(r.start)
	return nil
}
