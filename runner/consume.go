package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/faults"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/store"
	"github.com/dqbench/dqbench/strategy"
)

// consume runs one consumer slot until ctx ends: a consumer instance handles
// deliveries until a fault kills it, then a replacement takes its place.
func (r *variantRun) consume(ctx context.Context, ch brokers.Channel, ackFirst bool) error {
	for ctx.Err() == nil {
		gen := int(r.gens.Add(1))
		c, err := ch.Consumer(ctx, gen)
		if err != nil {
			return err
		}
		r.rec.Record(history.Event{Type: history.Start, Consumer: gen})
		err = r.handle(ctx, c, gen, ackFirst)
		var fatal errFatal
		switch {
		case errors.As(err, &fatal):
			c.Close()
			return err
		case errors.Is(err, errCrash):
			c.Abandon()
			r.rec.Record(history.Event{Type: history.Crash, Consumer: gen})
		case ctx.Err() != nil:
			c.Close()
			return nil
		default:
			// A broken connection or a fetch error: start over, as a
			// supervisor would restart the process.
			c.Abandon()
			r.rec.Record(history.Event{Type: history.Crash, Consumer: gen, Reason: err.Error()})
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
func (r *variantRun) handle(ctx context.Context, c brokers.Consumer, gen int, ackFirst bool) error {
	for {
		d, err := c.Next(ctx)
		if err != nil {
			return err
		}
		r.activity.Add(1)
		r.mu.Lock()
		r.deliveries[d.Intent]++
		attempt := r.deliveries[d.Intent]
		r.mu.Unlock()
		r.rec.Record(history.Event{
			Type: history.Deliver, Intent: d.Intent, Attempt: attempt, Consumer: gen,
			Partition: d.Partition, Offset: d.Offset, Redelivered: d.Redelivered,
		})
		crash := func(p faults.Point) error { return r.maybeCrash(p, d.Intent, attempt, gen) }

		if ackFirst {
			if err := r.ack(ctx, c, d, gen); err != nil {
				return err
			}
		}
		if err := crash(faults.BeforeProcess); err != nil {
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
		out, err := r.strat.Process(ctx, r.db, m, crash)
		if err != nil {
			if errors.Is(err, errCrash) || ctx.Err() != nil {
				return err
			}
			return errFatal{fmt.Errorf("strategy %s on intent %d: %w", r.strat.Name(), d.Intent, err)}
		}
		r.rec.Record(history.Event{Type: history.Effect, Intent: d.Intent, Attempt: attempt, Consumer: gen, Applied: out.Applied, Reason: out.Reason})
		if err := crash(faults.AfterEffectBeforeAck); err != nil {
			return err
		}
		if !ackFirst {
			if err := r.ack(ctx, c, d, gen); err != nil {
				return err
			}
		}
	}
}

func (r *variantRun) ack(ctx context.Context, c brokers.Consumer, d brokers.Delivery, gen int) error {
	if err := c.Ack(ctx, d); err != nil {
		return fmt.Errorf("ack intent %d: %w", d.Intent, err)
	}
	r.rec.Record(history.Event{Type: history.Ack, Intent: d.Intent, Consumer: gen, Partition: d.Partition, Offset: d.Offset})
	r.progress.Consumed.Add(1)
	r.activity.Add(1)
	return nil
}

// maybeCrash fires the consumer-crash faults scheduled at point p for this
// delivery.
func (r *variantRun) maybeCrash(p faults.Point, intent, attempt, gen int) error {
	for _, f := range r.crashes[p] {
		if f.sched.Fires(intent, attempt) {
			r.progress.Faults.Add(1)
			r.rec.Record(history.Event{Type: history.Fault, Fault: f.name, Point: string(p), Intent: intent, Attempt: attempt, Consumer: gen})
			return errCrash
		}
	}
	return nil
}
