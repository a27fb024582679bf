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
	"github.com/dqbench/dqbench/store"
	"github.com/dqbench/dqbench/strategy"
)

// errCrash ends a consumer at a crash point.
var errCrash = errors.New("consumer crashed by fault")

// consume runs one consumer slot until ctx ends: a consumer instance handles
// deliveries until a fault kills it, then a replacement takes its place.
func (r *variantRun) consume(ctx context.Context, dest brokers.Destination, ackFirst bool) error {
	for ctx.Err() == nil {
		gen := int(r.gens.Add(1))
		raw, err := dest.Consumer(ctx, gen)
		if err != nil {
			return err
		}
		c := history.RecordConsumer(raw, gen, r.seen, r.rec)
		err = r.handle(ctx, c, ackFirst)
		var fatal errFatal
		switch {
		case errors.As(err, &fatal):
			r.closeConsumer(ctx, c)
			return err
		case errors.Is(err, errCrash):
			c.Abandon("")
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
// instance. So a crash still redelivers exactly what was not acked.
func (r *variantRun) handle(ctx context.Context, c *history.RecordingConsumer, ackFirst bool) (err error) {
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
func (p *pendingAck) start(ctx context.Context, r *variantRun, c *history.RecordingConsumer, d brokers.Delivery) {
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
func (r *variantRun) deliver(ctx context.Context, c *history.RecordingConsumer, d brokers.Delivery, ackFirst bool, pending *pendingAck) error {
	crash := func(p catalog.CrashPoint) error {
		if !r.crashes.Armed(p) {
			return nil
		}
		if err := pending.wait(); err != nil {
			return err
		}
		if r.crashes.At(p, d, c.Gen()) {
			return errCrash
		}
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
	var b body
	if err := json.Unmarshal(d.Body, &b); err != nil {
		return errFatal{fmt.Errorf("intent %d: undecodable body: %w", d.Intent, err)}
	}
	m := strategy.Message{
		ID:     brokers.Key(b.Intent),
		Effect: store.Effect{Intent: b.Intent, Account: b.Account, Amount: b.Amount},
	}
	out, err := r.strat.Process(ctx, r.env, m, crash)
	if err != nil {
		if errors.Is(err, errCrash) || ctx.Err() != nil {
			return err
		}
		return errFatal{fmt.Errorf("strategy %s on intent %d: %w", r.v.Strategy, d.Intent, err)}
	}
	r.rec.Record(history.Event{Type: history.Effect, Intent: d.Intent, Attempt: d.Attempt, Consumer: c.Gen(), Applied: out.Applied, Reason: out.Reason})
	r.progressOn(d.Intent, doneEffect)
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
	pending.start(ctx, r, c, d) // in flight until its ack is done
	return nil
}

func (r *variantRun) ack(ctx context.Context, c *history.RecordingConsumer, d brokers.Delivery) error {
	if err := c.Ack(ctx, d); err != nil {
		return fmt.Errorf("ack intent %d: %w", d.Intent, err)
	}
	r.progress.Consumed.Add(1)
	r.progress.heardFrom(r.start)
	r.progressOn(d.Intent, doneAck)
	return nil
}

func (r *variantRun) closeConsumer(ctx context.Context, c *history.RecordingConsumer) {
	sctx, cancel := r.shutdownCtx(ctx)
	defer cancel()
	c.Close(sctx)
}
