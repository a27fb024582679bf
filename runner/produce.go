package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/recording"
	"github.com/dqbench/dqbench/scenario"
	"github.com/dqbench/dqbench/seeded"
	"github.com/dqbench/dqbench/strategy"
)

// produce publishes every intent, with at most window intents unconfirmed,
// and waits for the confirms; it gives up at the run's deadline.
func (r *variantRun) produce(ctx context.Context, dest brokers.Destination, prod scenario.Producer) (err error) {
	raw, err := dest.Producer(ctx)
	if err != nil {
		return err
	}
	p := recording.NewProducer(raw, r.rec)
	app, err := r.openProducerApp(ctx, prod.Pattern) // nil with pattern direct (outbox.go)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, r.closeProducerApp(ctx, app)) }()
	if prod.Pattern == catalog.Outbox {
		return r.produceOutbox(ctx, p, app, prod)
	}
	sem := make(chan struct{}, prod.Window)
	policy := retryPolicy{retries: prod.RetryCount(), timeout: prod.ConfirmTimeout.D(), backoff: prod.Backoff}
	var wg sync.WaitGroup
	pace := newPacer(prod.Rate)
	lag := lagLimit{max: int64(prod.MaxLag), idle: r.s.Drain.D(), f: &r.flow}
publish:
	for intent := 1; intent <= r.s.Messages; intent++ {
		if !pace.wait(ctx, intent) || !lag.wait(ctx, intent) || app.failed() != nil {
			break publish
		}
		if !app.beforePublish(ctx, r.s.Seed, intent) {
			continue // dual-write: the application died after its business row (or the write failed)
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			break publish
		}
		wg.Add(1)
		r.send(ctx, p, intent, policy, func(err error) {
			if err == nil {
				r.progress.heardFrom(r.start)
			}
			r.progress.published(r.counts)
			<-sem
			wg.Done()
		})
	}
	confirmed := make(chan struct{})
	go func() { wg.Wait(); close(confirmed) }()
	select {
	case <-confirmed:
	case <-ctx.Done():
	}
	// With ctx done, Close fails whatever is still unconfirmed, and each
	// callback records it; a client that does not answer is not waited for.
	p.Close(ctx)
	sctx, cancel := r.shutdown.ctx(ctx)
	defer cancel()
	select {
	case <-confirmed:
	case <-sctx.Done():
	}
	return app.ended(ctx)
}

// retryPolicy is the application's publish policy (producer.retries,
// producer.confirm_timeout, producer.backoff).
type retryPolicy struct {
	retries int
	timeout time.Duration     // 0: wait for the client's answer
	backoff *scenario.Backoff // nil: retry at once
}

// wait is how long the application waits before it sends intent's
// attempt (2 and later): the backoff, its jitter drawn from the seed.
func (p retryPolicy) wait(seed int64, intent, attempt int) time.Duration {
	if p.backoff == nil || attempt < 2 {
		return 0
	}
	return p.backoff.Wait(attempt-1, seeded.Unit(seed, "backoff", intent, attempt))
}

// errConfirmTimeout ends an attempt the application gave up waiting for.
var errConfirmTimeout = errors.New("no confirm within producer.confirm_timeout")

// send publishes intent and, by the policy, publishes it again after each
// attempt that ends without a confirm; done gets the last attempt's outcome.
// An attempt given up on at the timeout still has its own outcome recorded
// when the client reports it, so a late confirm shows in the history; a
// client that holds a window slot per unconfirmed publish is told, and the
// slot goes to the next publish (brokers.GiveUpper).
func (r *variantRun) send(ctx context.Context, p *recording.Producer, intent int, policy retryPolicy, done func(error)) {
	giveUp, _ := p.Producer.(brokers.GiveUpper)
	var try func(attempt int)
	try = func(attempt int) {
		var once sync.Once
		decide := func(err error, timedOut bool) {
			once.Do(func() {
				if timedOut {
					p.GaveUp(intent, attempt, err.Error())
					if giveUp != nil {
						giveUp.GiveUp(intent, attempt)
					}
				}
				// A producer-crash killed the client: the restarted
				// producer resends what it had no confirm for, whatever
				// the retry policy says (the fault's max_attempt bounds
				// how often one intent meets it). A fire-and-forget send
				// (brokers.ErrUnconfirmed) is never retried: the
				// application cannot know it failed.
				crashed := errors.Is(err, brokers.ErrProducerCrashed)
				if err == nil || errors.Is(err, brokers.ErrUnconfirmed) || attempt > policy.retries && !crashed || ctx.Err() != nil {
					done(err)
					return
				}
				// Not from the client's callback, which may not block on
				// a full client buffer. A restarted producer resends at
				// once; a retry waits the backoff.
				wait := policy.wait(r.s.Seed, intent, attempt+1)
				if crashed || wait <= 0 {
					go try(attempt + 1)
					return
				}
				t := time.NewTimer(wait)
				go func() {
					defer t.Stop()
					select {
					case <-t.C:
						try(attempt + 1)
					case <-ctx.Done():
						done(err)
					}
				}()
			})
		}
		var t confirmTimer
		r.publish(ctx, p, intent, attempt, func(err error) {
			t.answered()
			decide(err, false)
		})
		t.start(policy.timeout, func() { decide(errConfirmTimeout, true) })
	}
	try(1)
}

// publish sends one attempt of intent (the client may retry a lost response
// itself, resending the same bytes, so the same message id); done gets the
// outcome.
func (r *variantRun) publish(ctx context.Context, p *recording.Producer, intent, attempt int, done func(error)) {
	account, amount := history.Account(intent), seeded.Amount(r.s.Seed, intent)
	buf := body{
		Intent: intent, Account: account, Amount: amount,
		Version: strategy.ExpectedVersion(intent),
		ID:      messageID(r.v.ID, r.s.Seed, intent, attempt, account, amount),
	}.marshal()
	p.Publish(ctx, brokers.Message{Intent: intent, Attempt: attempt, Key: brokers.Key(intent), Body: buf}, done)
}

// messageID is the id the producer gives one send (application-level
// publish) from the variant's id source. A per-send UUID is derived from
// (seed, intent, attempt) so runs repeat; it is new on every application
// send, but the client's own retries resend the same bytes, so they keep it.
func messageID(src catalog.IDSource, seed int64, intent, attempt, account int, amount int64) string {
	switch src {
	case catalog.PerSendUUID:
		a, b := seeded.Hash(seed, "uuid", intent, attempt), seeded.Hash(seed, "uuid2", intent, attempt)
		return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", a>>32, (a>>16)&0xffff, a&0xfff, (b>>48)&0x3fff|0x8000, b&0xffffffffffff)
	case catalog.ContentHash:
		return fmt.Sprintf("%016x", seeded.Hash(0, "content", account, int(amount)))
	}
	return brokers.Key(intent)
}

// pacer holds the producer to producer.rate intents per second: intent i
// goes out no earlier than (i-1)/rate after the first.
type pacer struct {
	every time.Duration // 0: no pace
	start time.Time
}

func newPacer(rate int) pacer {
	if rate <= 0 {
		return pacer{}
	}
	return pacer{every: time.Second / time.Duration(rate), start: time.Now()}
}

// wait waits for intent's turn; false when ctx ended first.
func (p pacer) wait(ctx context.Context, intent int) bool {
	if p.every == 0 {
		return ctx.Err() == nil
	}
	d := time.Until(p.start.Add(time.Duration(intent-1) * p.every))
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// lagLimit holds the producer to producer.max_lag intents published and
// not yet acked: intent i goes out once fewer than max are outstanding.
// Intents that never get an ack (lost, refused, stuck) would hold it for
// good, so when none is acked for idle (the drain period) it counts what
// is outstanding as given up and goes on.
type lagLimit struct {
	max     int64 // 0: no limit
	idle    time.Duration
	f       *flow
	givenUp int64
}

// wait waits until intent may go out; false when ctx ended first.
func (l *lagLimit) wait(ctx context.Context, intent int) bool {
	if l.max == 0 {
		return ctx.Err() == nil
	}
	var stall *time.Timer
	defer func() {
		if stall != nil {
			stall.Stop()
		}
	}()
	for {
		out := int64(intent-1) - l.f.acked.Load() - l.givenUp
		if out < l.max {
			return ctx.Err() == nil
		}
		if stall == nil {
			stall = time.NewTimer(l.idle)
		}
		select {
		case <-l.f.ackedCh:
			stall.Reset(l.idle) // no stale tick since Go 1.23
		case <-stall.C:
			l.givenUp += out
			stall = nil
		case <-ctx.Done():
			return false
		}
	}
}

// confirmTimer gives one publish up after the confirm timeout. It starts
// once the publish is recorded (in Publish): started before, under load
// it fired first and the history had the attempt given up before it was
// sent. An outcome that comes before it starts (a client that answers at
// once) leaves it unstarted.
type confirmTimer struct {
	mu    sync.Mutex
	done  bool
	timer *time.Timer
}

// answered stops the timer, or keeps it from starting.
func (c *confirmTimer) answered() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done = true
	if c.timer != nil {
		c.timer.Stop()
	}
}

// start runs giveUp after timeout (none: never) unless answered first.
func (c *confirmTimer) start(timeout time.Duration, giveUp func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if timeout > 0 && !c.done {
		c.timer = time.AfterFunc(timeout, giveUp)
	}
}
