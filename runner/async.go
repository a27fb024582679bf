package runner

import (
	"context"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/recording"
)

// asyncQueue bounds the queue between an asynchronous consumer's poller
// and its worker (consumer processing: async).
const asyncQueue = 4096

// source is where a consumer instance's worker (handle) takes its
// deliveries from: the client itself (processing: sync, the default), or
// a queue a poller goroutine fills as fast as the client polls
// (processing: async), as an application that hands each poll to a worker
// goroutine and polls again at once. The poller takes every record of a
// poll from the client before the next poll, so the client's auto-commit
// (commit: auto) commits what sits in the queue unprocessed.
type source struct {
	next func(context.Context) (brokers.Delivery, error)
	// stop ends the poller and drops what the worker had not taken: a
	// consumer that dies loses its queue (the broker gives again only
	// what was not committed).
	stop func()
	// counted: what next returns is in flight already (counted when
	// queued), so that the drain never sees a queued delivery out of
	// flight.
	counted bool
}

// source returns the worker's source of deliveries for consumer c.
func (r *variantRun) source(ctx context.Context, c *recording.Consumer) source {
	if r.s.ConsumerFor(r.v).Processing != catalog.ProcessAsync {
		return source{next: c.Next, stop: func() {}}
	}
	pctx, cancel := context.WithCancel(ctx)
	queue := make(chan brokers.Delivery, asyncQueue)
	failed := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			d, err := c.Next(pctx) // records the deliver as it is polled
			if err != nil {
				failed <- err
				return
			}
			r.flow.inflight.Add(1)
			select {
			case queue <- d:
			case <-pctx.Done():
				r.flow.inflight.Add(-1)
				return
			}
		}
	}()
	next := func(ctx context.Context) (brokers.Delivery, error) {
		select {
		case d := <-queue:
			return d, nil
		default:
		}
		select {
		case d := <-queue:
			return d, nil
		case err := <-failed:
			return brokers.Delivery{}, err
		case <-ctx.Done():
			return brokers.Delivery{}, ctx.Err()
		}
	}
	stop := func() {
		cancel()
		<-done
		for {
			select {
			case <-queue:
				r.flow.inflight.Add(-1)
			default:
				return
			}
		}
	}
	return source{next: next, stop: stop, counted: true}
}

// work is the application's own work on a delivery before its strategy
// applies the effect (consumer processing_time): a worker slower than the
// poller.
func (r *variantRun) work(ctx context.Context) error {
	d := r.s.ConsumerFor(r.v).ProcessingTime.D()
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
