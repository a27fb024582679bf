package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/recording"
	"github.com/dqbench/dqbench/store"
	"github.com/dqbench/dqbench/strategy"
)

// errCrash ends a consumer at a crash point.
var errCrash = errors.New("consumer crashed by fault")

// errConnectionReset ends a consumer whose connection a fault reset; its
// slot starts a replacement, as after a broken connection.
var errConnectionReset = errors.New("connection reset by fault")

// errZombie ends a consumer that lost its lease and finished its delivery:
// its slot has a replacement already.
var errZombie = errors.New("consumer lost its lease")

// zombieWait bounds how long a stalled consumer waits for another instance
// to reach the same point with the same intent before it wakes anyway.
const zombieWait = 3 * time.Second

// consume runs one consumer slot until ctx ends: a consumer instance handles
// deliveries until a fault kills it, then a replacement takes its place.
func (r *variantRun) consume(ctx context.Context, dest brokers.Destination, ackFirst bool) error {
	for ctx.Err() == nil {
		gen := int(r.gens.Add(1))
		raw, err := dest.Consumer(ctx, gen)
		if err != nil {
			if ctx.Err() != nil {
				return nil // the drain ended while a replacement started
			}
			return err
		}
		c := recording.NewConsumer(raw, gen, r.seen, r.rec)
		err = r.handle(ctx, c, ackFirst)
		r.consumerEnded(ctx, gen, err)
		var fatal errFatal
		switch {
		case errors.As(err, &fatal):
			r.closeConsumer(ctx, c)
			return err
		case errors.Is(err, errCrash):
			c.Abandon("")
		case errors.Is(err, errZombie):
			return nil // abandoned when it stalled; a replacement runs
		case ctx.Err() != nil:
			r.closeConsumer(ctx, c)
			return nil
		default:
			// A broken connection or a fetch error: start over, as a
			// supervisor would restart the process.
			c.Abandon(err.Error())
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

// errFatal marks a failure that restarting the consumer cannot cure (the
// business store failed, a message cannot be decoded); it ends the run.
type errFatal struct{ err error }

func (e errFatal) Error() string { return e.err.Error() }
func (e errFatal) Unwrap() error { return e.err }

// handle processes deliveries on one consumer instance. It returns errCrash
// when a fault kills the instance.
//
// With ack after processing, a delivery's ack runs while the next delivery
// is processed, and is waited for before anything that depends on it: the
// next ack, any crash point where a fault is armed, and the end of the
// instance. So a crash still redelivers exactly what was not acked. A
// consumer whose client delivers one message at a time (oneInFlight) acks
// before it takes the next: there a fault that breaks the connection
// during the ack finds no later effect applied and not acked.
func (r *variantRun) handle(ctx context.Context, c *recording.Consumer, ackFirst bool) (err error) {
	var pending pendingAck
	defer func() {
		if werr := pending.wait(); werr != nil && err == nil {
			err = werr
		}
	}()
	for {
		d, err := c.Next(ctx)
		if err != nil {
			return err
		}
		r.progress.heardFrom(r.start)
		r.inflight.Add(1)
		err = r.deliver(ctx, c, d, ackFirst, &pending)
		if err != nil {
			r.inflight.Add(-1)
			return err
		}
	}
}

// pendingAck is an ack running in the background; until it is done, its
// delivery still counts as in flight.
type pendingAck struct {
	done chan error
}

// start acks d in the background, taking over d's in-flight count; the
// previous ack must have been waited for.
func (p *pendingAck) start(ctx context.Context, r *variantRun, c *recording.Consumer, d brokers.Delivery) {
	p.done = make(chan error, 1)
	go func() {
		err := r.ack(ctx, c, d)
		r.inflight.Add(-1)
		p.done <- err
	}()
}

// wait waits for the ack in flight, if any.
func (p *pendingAck) wait() error {
	if p.done == nil {
		return nil
	}
	err := <-p.done
	p.done = nil
	return err
}

// deliver handles one delivery: ack (at-most-once), process, ack
// (at-least-once), with the crash points in between.
func (r *variantRun) deliver(ctx context.Context, c *recording.Consumer, d brokers.Delivery, ackFirst bool, pending *pendingAck) error {
	zombie := false
	crash := func(p catalog.CrashPoint) error {
		if !r.crashes.Armed(p) || zombie {
			return nil
		}
		if err := pending.wait(); err != nil {
			return err
		}
		if r.crashes.Hits(p, d) {
			// What hits here (a crash, a failover) meets the broker with
			// every ack so far applied.
			if err := syncAcks(ctx, c); err != nil && ctx.Err() == nil {
				return err
			}
		}
		switch r.crashes.At(p, d, c.Gen()) {
		case catalog.ConsumerCrash:
			return errCrash
		case catalog.ConsumerZombie:
			zombie = true
			r.stall(ctx, c, p, d)
			return nil
		}
		r.pass(p, d.Intent)
		return nil
	}
	if ackFirst {
		if err := r.ack(ctx, c, d); err != nil {
			return err
		}
	}
	if err := crash(catalog.BeforeProcess); err != nil {
		return err
	}
	if r.failures.Resets(d, c.Gen()) {
		if err := pending.wait(); err != nil {
			return err
		}
		if err := resetConnection(ctx, c); err != nil {
			return errFatal{fmt.Errorf("connection-reset on intent %d: %w", d.Intent, err)}
		}
		return errConnectionReset
	}
	if lat, dur, ok := r.failures.Slows(d, c.Gen()); ok {
		if err := slow(ctx, c, lat, dur); err != nil {
			return errFatal{fmt.Errorf("latency on intent %d: %w", d.Intent, err)}
		}
	}
	if dur, ok := r.failures.Partitions(d, c.Gen()); ok {
		if err := pending.wait(); err != nil {
			return err
		}
		if err := partition(ctx, c, dur); err != nil {
			return errFatal{fmt.Errorf("partition on intent %d: %w", d.Intent, err)}
		}
	}
	if r.failures.Fails(d, c.Gen()) {
		return r.fail(ctx, c, d, ackFirst, pending)
	}
	var b body
	if err := json.Unmarshal(d.Body, &b); err != nil {
		return errFatal{fmt.Errorf("intent %d: undecodable body: %w", d.Intent, err)}
	}
	m := strategy.Message{
		ID:      b.ID,
		Effect:  store.Effect{Intent: b.Intent, Account: b.Account, Amount: b.Amount},
		Version: b.Version,
	}
	out, err := r.strat.Process(ctx, r.env, m, crash)
	if err != nil {
		if errors.Is(err, errCrash) || ctx.Err() != nil && !errors.Is(err, store.ErrStalled) {
			return err
		}
		// A store that stopped answering is why the run ends, even when
		// the end of the run is what cut the call short.
		return errFatal{fmt.Errorf("strategy %s on intent %d: %w", r.v.Strategy, d.Intent, err)}
	}
	r.rec.Record(history.Event{Type: history.Effect, Intent: d.Intent, Attempt: d.Attempt, Consumer: c.Gen(), Applied: out.Applied, Rejected: out.Rejected, Reason: out.Reason})
	r.progressOn(d.Intent, doneEffect)
	if zombie {
		return errZombie // it cannot ack: its connection is gone
	}
	if err := crash(catalog.AfterEffectBeforeAck); err != nil {
		return err
	}
	if ackFirst {
		r.inflight.Add(-1)
		return nil
	}
	if err := pending.wait(); err != nil {
		return err
	}
	if oneInFlight(c) {
		// The client hands over the next delivery only once this one is
		// acked: nothing overlaps the ack.
		if err := r.ack(ctx, c, d); err != nil {
			return err // handle takes d out of flight
		}
		r.inflight.Add(-1)
		return nil
	}
	pending.start(ctx, r, c, d) // in flight until its ack is done
	return nil
}

// passKey is a crash point and an intent another instance may pass.
type passKey struct {
	p      catalog.CrashPoint
	intent int
}

// stall makes the consumer a zombie at point p: it loses its lease (the
// broker connection closes, as when a session times out, and the broker
// gives what it had not acked to another instance), a replacement starts,
// and it stays stalled until another instance has reached p with the same
// intent (or zombieWait passes). Then it goes on with d, which it can no
// longer ack. The wait is the stall "long enough" made exact, so the two
// instances meet every time rather than by luck.
func (r *variantRun) stall(ctx context.Context, c *recording.Consumer, p catalog.CrashPoint, d brokers.Delivery) {
	k := passKey{p, d.Intent}
	ch := make(chan struct{})
	r.mu.Lock()
	if r.waiting == nil {
		r.waiting = map[passKey]chan struct{}{}
	}
	r.waiting[k] = ch
	r.mu.Unlock()
	c.Abandon(fmt.Sprintf("lease lost: stalled at %s past its session timeout; another instance took over", p))
	r.startSlot()
	select {
	case <-ch:
	case <-ctx.Done():
	case <-time.After(zombieWait):
		r.mu.Lock()
		delete(r.waiting, k)
		r.mu.Unlock()
	}
}

// pass notes that a consumer reached p with intent, waking a zombie
// stalled there.
func (r *variantRun) pass(p catalog.CrashPoint, intent int) {
	k := passKey{p, intent}
	r.mu.Lock()
	ch := r.waiting[k]
	delete(r.waiting, k)
	r.mu.Unlock()
	if ch != nil {
		close(ch)
	}
}

func (r *variantRun) ack(ctx context.Context, c *recording.Consumer, d brokers.Delivery) error {
	if err := c.Ack(ctx, d); err != nil {
		return fmt.Errorf("ack intent %d: %w", d.Intent, err)
	}
	r.progress.Consumed.Add(1)
	r.progress.heardFrom(r.start)
	r.progressOn(d.Intent, doneAck)
	return nil
}

func (r *variantRun) closeConsumer(ctx context.Context, c *recording.Consumer) {
	sctx, cancel := r.shutdownCtx(ctx)
	defer cancel()
	c.Close(sctx)
}
