package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/faults"
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

// errOverran ends a consumer that held a delivery past the broker's ack
// deadline and then finished and acked it: its slot has a replacement
// already.
var errOverran = errors.New("consumer overran its ack deadline")

// zombieWait bounds how long a stalled consumer waits for another instance
// to reach the same point with the same intent before it wakes anyway.
const zombieWait = 3 * time.Second

// slots are the variant's consumer slots: each runs consumer instances one
// after another (a replacement after each crash).
type slots struct {
	ctx      context.Context
	stop     context.CancelFunc
	errs     chan error // the first fatal error
	dest     brokers.Destination
	ackFirst bool
	wg       sync.WaitGroup
	gens     atomic.Int64          // numbers consumer instances from 1
	seen     *recording.Deliveries // deliveries per intent, over all instances
}

// fail notes the slots' first fatal error and stops them all.
func (s *slots) fail(err error) {
	select {
	case s.errs <- err:
	default:
	}
	s.stop()
}

// startSlot starts a consumer slot; a fatal error in it stops them all.
func (r *variantRun) startSlot() {
	s := &r.slots
	s.wg.Go(func() {
		if err := r.consume(s.ctx, s.dest, s.ackFirst); err != nil {
			s.fail(err)
		}
	})
}

// consume runs one consumer slot until ctx ends: a consumer instance handles
// deliveries until a fault kills it, then a replacement takes its place.
//
// The slot counts as down (flow.down) from its start until an instance has
// subscribed, and again from the moment an instance ends (handle counts
// it) until its replacement has.
func (r *variantRun) consume(ctx context.Context, dest brokers.Destination, ackFirst bool) error {
	r.flow.down.Add(1)
	defer r.flow.down.Add(-1) // every return is outside an instance's life
	for ctx.Err() == nil {
		gen := int(r.slots.gens.Add(1))
		raw, err := dest.Consumer(ctx, gen)
		if err != nil {
			if ctx.Err() != nil {
				return nil // the drain ended while a replacement started
			}
			return err
		}
		r.flow.down.Add(-1) // up: handle counts it down again as it returns
		c := recording.NewConsumer(raw, gen, r.slots.seen, r.rec)
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
		case errors.Is(err, errOverran):
			r.closeConsumer(ctx, c)
			return nil // a replacement runs
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
//
// As it returns, the instance's slot counts as down, before the delivery
// in its hands leaves flight: the drain never sees neither.
func (r *variantRun) handle(ctx context.Context, c *recording.Consumer, ackFirst bool) (err error) {
	pending := r.newPendingAck(ctx, c, ackFirst)
	defer func() {
		if werr := pending.wait(); werr != nil && err == nil {
			err = werr
		}
	}()
	src := r.source(ctx, c)
	defer src.stop() // after the slot counts as down, as the delivery in hand
	holding := false // a delivery is in flight
	defer func() {
		r.flow.down.Add(1)
		if holding {
			r.flow.inflight.Add(-1)
		}
	}()
	for {
		d, err := src.next(ctx)
		if err != nil {
			return err
		}
		r.progress.heardFrom(r.start)
		r.handBack.delivered(d.Intent)
		if !src.counted {
			r.flow.inflight.Add(1)
		}
		holding = true
		err = r.deliver(ctx, c, d, ackFirst, pending)
		if errors.Is(err, errOverran) {
			holding = false // settled: its ack has taken d out of flight
			return err
		}
		if err != nil {
			return err
		}
		holding = false
	}
}

// errHandedBack ends a delivery whose processing a fault failed: it was
// handed back to the broker.
var errHandedBack = errors.New("processing failed: handed back")

// delivery is one delivery in a consumer instance's hands.
type delivery struct {
	c        *recording.Consumer
	d        brokers.Delivery
	ackFirst bool
	pending  *pendingAck
	// zombie: the instance lost its lease at a crash point; it meets no
	// more faults and cannot ack.
	zombie bool
	// overran: the instance held the delivery past the broker's ack
	// deadline; it stops once the delivery is acked.
	overran bool
}

// deliver handles one delivery: ack (at-most-once), process, ack
// (at-least-once), asking the faults at each point in between.
func (r *variantRun) deliver(ctx context.Context, c *recording.Consumer, d brokers.Delivery, ackFirst bool, pending *pendingAck) error {
	h := &delivery{c: c, d: d, ackFirst: ackFirst, pending: pending}
	if ackFirst {
		if err := r.ack(ctx, c, d); err != nil {
			return err
		}
	}
	err := r.at(ctx, h, catalog.BeforeProcess)
	for errors.Is(err, errRetry) {
		err = r.again(ctx, h, catalog.BeforeProcess)
	}
	if errors.Is(err, errHandedBack) {
		return nil
	}
	if err != nil {
		return err
	}
	for {
		// A processing that fails (fail-once) with on_failure
		// retry-in-process runs again from here: what it wrote stays.
		err := r.process(ctx, h)
		if err == nil && h.zombie {
			return errZombie // it cannot ack: its connection is gone
		}
		if err == nil {
			err = r.at(ctx, h, catalog.AfterEffectBeforeAck)
		}
		if errors.Is(err, errRetry) {
			continue
		}
		if errors.Is(err, errHandedBack) {
			return nil
		}
		if err != nil {
			return err
		}
		break
	}
	if h.zombie {
		return errZombie // it lost its lease here: it cannot ack
	}
	if err := r.settle(ctx, h); err != nil || !h.overran {
		return err
	}
	return errOverran // handle waits for the ack in flight
}

// process applies the delivery's business effect through the strategy,
// which asks the faults at its own crash points, and records the effect.
func (r *variantRun) process(ctx context.Context, h *delivery) error {
	b, err := unmarshalBody(h.d.Body)
	if err != nil {
		return errFatal{fmt.Errorf("intent %d: undecodable body: %w", h.d.Intent, err)}
	}
	if err := r.work(ctx); err != nil {
		return err
	}
	id := deliveryID(r.v.ID, h.d, b.ID)
	m := strategy.Message{
		ID:      id,
		Effect:  store.Effect{Intent: b.Intent, Account: b.Account, Amount: b.Amount, Key: id},
		Version: b.Version,
	}
	out, err := r.strat.Process(ctx, r.env, m, func(p catalog.CrashPoint) error { return r.at(ctx, h, p) })
	if err != nil {
		if errors.Is(err, errCrash) || errors.Is(err, errRetry) || errors.Is(err, errHandedBack) || ctx.Err() != nil && !errors.Is(err, store.ErrStalled) {
			return err
		}
		// A store that stopped answering is why the run ends, even when
		// the end of the run is what cut the call short.
		return errFatal{fmt.Errorf("strategy %s on intent %d: %w", r.v.Strategy, h.d.Intent, err)}
	}
	r.rec.Record(history.Event{Type: history.Effect, Intent: h.d.Intent, Attempt: h.d.Attempt, Consumer: h.c.Gen(), Applied: out.Applied, Rejected: out.Rejected, Reason: out.Reason})
	r.flow.reached(h.d.Intent, doneEffect)
	return nil
}

// settle acks a processed delivery (ack after processing) or takes it out
// of flight (acked before).
func (r *variantRun) settle(ctx context.Context, h *delivery) error {
	if h.ackFirst {
		r.flow.inflight.Add(-1)
		return nil
	}
	if err := h.pending.beforeNext(); err != nil {
		return err
	}
	if oneInFlight(h.c) {
		// The client hands over the next delivery only once this one is
		// acked: nothing overlaps the ack.
		if err := r.ack(ctx, h.c, h.d); err != nil {
			return err // handle takes d out of flight
		}
		r.flow.inflight.Add(-1)
		return nil
	}
	h.pending.start(ctx, r, h.c, h.d) // in flight until its ack is done
	return nil
}

// at asks the faults once at point p and acts out what they say, in
// order. A zombie meets no more faults.
func (r *variantRun) at(ctx context.Context, h *delivery, p catalog.CrashPoint) error {
	if h.zombie {
		return nil
	}
	for a := range r.consumerFaults.At(ctx, p, h.d, h.c.Gen()) {
		if err := r.act(ctx, h, p, a); err != nil {
			return err
		}
	}
	return nil
}

// again asks the faults that failed the processing at p once more, for a
// retry in process; errRetry when one fails it again.
func (r *variantRun) again(ctx context.Context, h *delivery, p catalog.CrashPoint) error {
	for a := range r.consumerFaults.Again(ctx, p, h.d, h.c.Gen()) {
		if err := r.act(ctx, h, p, a); err != nil {
			return err
		}
	}
	return nil
}

// act performs one action a fault decided at point p.
func (r *variantRun) act(ctx context.Context, h *delivery, p catalog.CrashPoint, a faults.Action) error {
	switch a.Kind {
	case faults.Settle:
		return h.pending.wait()
	case faults.SyncAcks:
		// What hits here (a crash, a failover) meets the broker with
		// every ack so far applied.
		if err := applyPower(ctx, h.c, a.Power); err != nil && !errors.Is(err, brokers.ErrNoPower) && ctx.Err() == nil {
			return err
		}
	case faults.Passed:
		r.zombies.pass(p, h.d.Intent)
	case faults.Crash:
		return errCrash
	case faults.Zombie:
		h.zombie = true
		r.stall(ctx, h.c, p, h.d)
	case faults.Reset:
		if err := r.settleAndApply(ctx, h, a); err != nil {
			return err
		}
		return errConnectionReset
	case faults.Slow:
		return r.apply(ctx, h, a)
	case faults.Partition:
		return r.settleAndApply(ctx, h, a)
	case faults.Fail:
		if err := r.fail(ctx, h, a.Reason); err != nil {
			return err
		}
		return errHandedBack
	case faults.FailTransient:
		return r.failTransient(ctx, h)
	case faults.Overrun:
		h.overran = true
		r.overrun(ctx, p, h.d, a.For)
	default:
		return fmt.Errorf("%w: the consumer loop cannot act out action %d of fault %s", ErrInternal, a.Kind, a.Fault)
	}
	return nil
}

// apply applies the power a fault gives to the instance's connection; a
// broker that cannot ends the run.
func (r *variantRun) apply(ctx context.Context, h *delivery, a faults.Action) error {
	if err := applyPower(ctx, h.c, a.Power); err != nil {
		return errFatal{fmt.Errorf("fault %s on intent %d: %w", a.Fault, h.d.Intent, err)}
	}
	return nil
}

// settleAndApply waits for the ack in flight, then applies a's power: it
// meets the broker with every earlier ack done.
func (r *variantRun) settleAndApply(ctx context.Context, h *delivery, a faults.Action) error {
	if err := h.pending.wait(); err != nil {
		return err
	}
	return r.apply(ctx, h, a)
}

// zombies are the consumer instances stalled at a crash point, each
// waiting for another instance to pass the same point with the same
// intent.
type zombies struct {
	mu      sync.Mutex
	waiting map[passKey]chan struct{}
}

// passKey is a crash point and an intent another instance may pass.
type passKey struct {
	p      catalog.CrashPoint
	intent int
}

// wait registers a zombie at k; the channel closes when another instance
// passes k.
func (z *zombies) wait(k passKey) <-chan struct{} {
	ch := make(chan struct{})
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.waiting == nil {
		z.waiting = map[passKey]chan struct{}{}
	}
	z.waiting[k] = ch
	return ch
}

// forget drops the zombie at k, which woke by itself.
func (z *zombies) forget(k passKey) {
	z.mu.Lock()
	defer z.mu.Unlock()
	delete(z.waiting, k)
}

// pass notes that a consumer reached p with intent, waking a zombie
// stalled there.
func (z *zombies) pass(p catalog.CrashPoint, intent int) {
	k := passKey{p, intent}
	z.mu.Lock()
	ch := z.waiting[k]
	delete(z.waiting, k)
	z.mu.Unlock()
	if ch != nil {
		close(ch)
	}
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
	ch := r.zombies.wait(k)
	c.LoseLease(p)
	r.startSlot()
	select {
	case <-ch:
	case <-ctx.Done():
	case <-time.After(zombieWait):
		r.zombies.forget(k)
	}
}

// ackTries bounds the sends of one ack whose confirmation does not come
// (brokers.ErrAckUnconfirmed); after the last the instance ends as after a
// broken connection.
const ackTries = 3

// ack acks d. An ack the broker did not confirm in time (a double ack) is
// sent again, as an application that knows would: acking twice is safe,
// and an ack that gets there within the broker's ack deadline spares the
// redelivery.
// overrun holds the consumer at point p with d, connected and without
// acking, past the broker's ack deadline: another instance starts (a
// replacement for this one, which stops once d is acked) and the broker
// delivers d again to it once the deadline has passed. The hold lasts until
// that instance has reached p with the same intent (or limit passes): a
// processing "slower than ack_wait" made exact, so the two meet every time.
func (r *variantRun) overrun(ctx context.Context, p catalog.CrashPoint, d brokers.Delivery, limit time.Duration) {
	k := passKey{p, d.Intent}
	ch := r.zombies.wait(k)
	r.startSlot()
	select {
	case <-ch:
	case <-ctx.Done():
	case <-time.After(limit):
		r.zombies.forget(k)
	}
}

func (r *variantRun) ack(ctx context.Context, c *recording.Consumer, d brokers.Delivery) error {
	err := c.Ack(ctx, d)
	for try := 1; errors.Is(err, brokers.ErrAckUnconfirmed) && try < ackTries && ctx.Err() == nil; try++ {
		err = c.Ack(ctx, d)
	}
	if err != nil {
		return fmt.Errorf("ack intent %d: %w", d.Intent, err)
	}
	r.progress.consumed(r.counts, 1)
	r.progress.heardFrom(r.start)
	r.flow.reached(d.Intent, doneAck)
	r.handBack.settled(d.Intent)
	return nil
}

func (r *variantRun) closeConsumer(ctx context.Context, c *recording.Consumer) {
	sctx, cancel := r.shutdown.ctx(ctx)
	defer cancel()
	c.Close(sctx)
}

// deliveryID is the id the strategy deduplicates on: what the producer
// wrote (id), or with a delivery-side source the broker's tag of the
// delivery or the position it was stored at.
func deliveryID(src catalog.IDSource, d brokers.Delivery, id string) string {
	switch src {
	case catalog.DeliveryTag:
		return "tag:" + d.Tag
	case catalog.Offset:
		return "offset:" + d.Position
	}
	return id
}
