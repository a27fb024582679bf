package runner

import (
	"context"
	"encoding/json"
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
	"github.com/dqbench/dqbench/scenario"
	"github.com/dqbench/dqbench/seeded"
	"github.com/dqbench/dqbench/store"
	"github.com/dqbench/dqbench/strategy"
)

// variantRun is one variant's pipeline: producer, consumers, faults, store.
type variantRun struct {
	// interruptHard is when shutdown must end after Ctrl-C, set by the
	// first shutdown step that sees it.
	interruptOnce sync.Once
	interruptHard time.Time

	s        *scenario.Scenario
	v        scenario.Variant
	broker   brokers.Broker
	rec      *history.VariantRecorder
	progress *Progress
	storeDir string // for SQLite files
	name     string
	start    time.Time // the run's start
	hard     time.Time // the run's hard deadline: shutdown ends by then

	strat strategy.Instance // the variant's (runner/strategy.go)
	env   strategy.Env
	// consumerFaults decides what faults do to each delivery.
	consumerFaults faults.Consumer
	kills          *faults.Kills // a process variant's kill faults (process.go)
	seen           *recording.Deliveries
	gens           atomic.Int64

	// progressed counts intents that reached an ack or an effect for the
	// first time, so the drain can tell a slow consumer from a stuck or
	// crash-looping one; inflight counts deliveries a consumer is handling.
	progressed atomic.Int64
	inflight   atomic.Int64
	mu         sync.Mutex
	done       []uint8 // by intent: doneAck, doneEffect
	waiting    map[passKey]chan struct{}
	looping    map[int]bool // failed intents handed back: requeued (true) or refused
	// starved: the drain ended with healthy messages waiting behind
	// leftLooping.
	starved bool
	// leftLooping: the failed intents still requeued in a loop when the
	// drain ended.
	leftLooping []int

	slots slots

	// The consume-transform-produce stage (stage.go), when the variant
	// has one.
	stage       *scenario.Stage
	stageFaults *faults.Stage
	stageSeen   *recording.Deliveries
	stageGens   atomic.Int64
	stageSlots  atomic.Int64 // slots started, for a joining instance's slot
	stager      brokers.Stager
	batches     atomic.Int64
}

// slots are the variant's consumer slots: each runs consumer instances one
// after another (a replacement after each crash).
type slots struct {
	ctx      context.Context
	stop     context.CancelFunc
	errs     chan error // the first fatal error
	dest     brokers.Destination
	ackFirst bool
	wg       sync.WaitGroup
}

// startSlot starts a consumer slot; a fatal error in it stops them all.
func (r *variantRun) startSlot() {
	s := &r.slots
	s.wg.Go(func() {
		if err := r.consume(s.ctx, s.dest, s.ackFirst); err != nil {
			select {
			case s.errs <- err:
			default:
			}
			s.stop()
		}
	})
}

const (
	doneAck uint8 = 1 << iota
	doneEffect
)

// body is the message payload: one business intent.
type body struct {
	Intent  int   `json:"intent"`
	Account int   `json:"account"`
	Amount  int64 `json:"amount"`
	// Version is the account version the update expects (version-cas).
	Version int64 `json:"version"`
	// ID is the message id from the variant's id source.
	ID string `json:"id"`
}

// run runs the variant. It returns the store audit whenever the store could
// be read (also after the deadline), and a cleanup error apart from the
// run's own (the broker's and the store's, joined).
func (r *variantRun) run(ctx context.Context) (audit *history.Audit, cleanup, err error) {
	if r.v.Process != nil {
		return r.runProcess(ctx)
	}
	prod, cons := r.s.ProducerFor(r.v), r.s.ConsumerFor(r.v)
	st, err := store.Open(ctx, store.Where{Ref: r.s.StoreFor(r.v), Dir: r.storeDir, Name: r.name, Conns: cons.Instances})
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		// Runs last: a PostgreSQL store drops its schema here.
		cctx, cancel := r.shutdownCtx(ctx)
		defer cancel()
		if cerr := store.CloseBy(cctx, st); errors.Is(cerr, store.ErrCleanup) {
			cleanup = errors.Join(cleanup, cerr)
		}
	}()
	r.env = strategy.Env{Store: st, Params: r.v.Params, Intents: r.s.Messages}
	if desc, _ := catalog.LookupStrategy(r.v.Strategy); desc.NeedsRedis {
		rd, err := store.OpenRedis(ctx, r.s.Redis, "dqbench:"+r.name+":")
		if err != nil {
			return nil, nil, err
		}
		defer func() {
			cctx, cancel := r.shutdownCtx(ctx)
			defer cancel()
			if cerr := store.CloseBy(cctx, rd); errors.Is(cerr, store.ErrCleanup) {
				cleanup = errors.Join(cleanup, cerr)
			}
		}()
		r.env.Redis = rd
	}
	if r.strat, err = strategy.Open(ctx, r.v.Strategy, r.env); err != nil {
		return nil, nil, err
	}
	defer func() { err = errors.Join(err, r.closeStrategy()) }() // after the consumers stop
	r.seen = recording.NewDeliveries(r.s.Messages)
	r.done = make([]uint8, r.s.Messages+1)

	spec := brokers.DestinationSpec{
		Name: r.name, Idempotent: *prod.Idempotent, Acks: prod.Acks, Window: prod.Window,
		Retries:  prod.RetryCount(),
		Prefetch: cons.Prefetch, AutoAck: cons.Ack == catalog.AckAuto,
		Settings:   r.s.BrokerSettingsFor(r.v),
		DeadLetter: cons.OnFailure == catalog.FailReject || cons.DeliveryLimit > 0,
	}
	if r.stage = r.s.StageFor(r.v); r.stage != nil {
		spec.Stage = &brokers.StageSpec{Transactional: r.stage.IsTransactional()}
		r.stageFaults = &faults.Stage{Transactional: r.stage.IsTransactional()}
		r.stageSeen = recording.NewDeliveries(r.s.Messages)
	}
	dest, err := r.broker.Open(ctx, spec)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		// Clean up even after the deadline, but not past the hard one.
		cctx, cancel := r.shutdownCtx(ctx)
		defer cancel()
		cleanup = errors.Join(cleanup, dest.Close(cctx))
	}()
	if lr, ok := dest.(brokers.LimitReporter); ok {
		r.rec.Record(history.Event{Type: history.Limits, Reason: lr.Limits()})
	}
	if err := r.arm(dest); err != nil {
		return nil, nil, err
	}

	// Consumers run until the drain ends.
	consCtx, stopConsumers := context.WithCancel(ctx)
	defer stopConsumers()
	consErr := make(chan error, 1)
	r.slots = slots{ctx: consCtx, stop: stopConsumers, errs: consErr, dest: dest, ackFirst: cons.Ack == catalog.AckBeforeProcess || cons.Ack == catalog.AckAuto}
	if r.stage != nil {
		if err := r.startStage(dest); err != nil {
			return nil, nil, err
		}
	}
	for range cons.Instances {
		r.startSlot()
	}
	if cons.OnFailure == catalog.FailReject || cons.DeliveryLimit > 0 {
		r.slots.wg.Go(func() {
			if err := r.readDeadLetters(consCtx, dest); err != nil {
				select {
				case consErr <- err:
				default:
				}
				stopConsumers()
			}
		})
	}

	runErr := r.produce(ctx, dest, prod)
	var drained bool
	var backlog int64
	var why string
	if runErr == nil {
		drained, backlog, why, runErr = r.drain(ctx, dest, consErr)
	}
	stopConsumers()
	r.slots.wg.Wait()
	select {
	case cerr := <-consErr:
		// A store that stopped answering is why the run did not finish,
		// rather than the deadline it made the run reach.
		if runErr == nil || errors.Is(cerr, store.ErrStalled) {
			runErr = cerr
		}
	default:
	}
	switch {
	case ctx.Err() != nil:
		why = "the run ended: " + ctx.Err().Error()
	case runErr != nil:
		why = runErr.Error()
	}
	r.rec.Record(history.Event{Type: history.Drain, Drained: drained, Backlog: backlog, Reason: why, Intents: r.leftLooping, Starved: r.starved})

	// The store is read even when the run was cut short, so that what was
	// recorded can still be judged. A local store cannot hang, so its audit
	// is not cut short; a store server that stopped answering is given
	// until the hard deadline.
	actx, cancel := context.WithoutCancel(ctx), context.CancelFunc(func() {})
	if _, local := st.(*store.SQLite); !local {
		actx, cancel = r.shutdownCtx(ctx)
	}
	defer cancel()
	a, err := st.Audit(actx)
	if err != nil {
		return nil, nil, errors.Join(runErr, err)
	}
	if runErr != nil && ctx.Err() != nil && !errors.Is(runErr, store.ErrStalled) {
		runErr = ctx.Err()
	}
	return &a, nil, runErr
}

// arm installs every configured fault that can act in this variant, and
// records which.
func (r *variantRun) arm(dest brokers.Destination) error {
	st, _ := catalog.LookupStrategy(r.v.Strategy)
	env := faults.Env{Dest: dest, Strategy: st, Consumer: &r.consumerFaults, Stage: r.stageFaults, Kills: r.kills, Fired: func(e history.Event) {
		r.progress.Faults.Add(1)
		r.rec.Record(e)
	}}
	for _, f := range r.s.Faults {
		armed, err := faults.Install(faults.Fault{
			Name: f.Name, Type: f.Type, Params: f.Params,
			Schedule: faults.Schedule{
				Seed: r.s.Seed, Fault: f.Name, Every: f.Every,
				Probability: f.Probability, MaxAttempt: f.MaxAttempt,
			},
		}, env)
		if err != nil {
			return err
		}
		if armed {
			r.rec.Record(history.Event{Type: history.Armed, Fault: f.Name})
		}
	}
	return nil
}

// produce publishes every intent, with at most window intents unconfirmed,
// and waits for the confirms; it gives up at the run's deadline.
func (r *variantRun) produce(ctx context.Context, dest brokers.Destination, prod scenario.Producer) error {
	raw, err := dest.Producer(ctx)
	if err != nil {
		return err
	}
	p := recording.NewProducer(raw, r.rec)
	sem := make(chan struct{}, prod.Window)
	policy := retryPolicy{retries: prod.RetryCount(), timeout: prod.ConfirmTimeout.D()}
	var wg sync.WaitGroup
publish:
	for intent := 1; intent <= r.s.Messages; intent++ {
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
			r.progress.Published.Add(1)
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
	sctx, cancel := r.shutdownCtx(ctx)
	defer cancel()
	select {
	case <-confirmed:
	case <-sctx.Done():
	}
	return ctx.Err()
}

// retryPolicy is the application's publish policy (producer.retries,
// producer.confirm_timeout).
type retryPolicy struct {
	retries int
	timeout time.Duration // 0: wait for the client's answer
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
		var timer *time.Timer
		decide := func(err error, timedOut bool) {
			once.Do(func() {
				if timedOut {
					r.rec.Record(history.Event{Type: history.PubFailed, Intent: intent, Attempt: attempt, Reason: err.Error()})
					if giveUp != nil {
						giveUp.GiveUp(intent, attempt)
					}
				}
				if err == nil || attempt > policy.retries || ctx.Err() != nil {
					done(err)
					return
				}
				// Not from the client's callback, which may not block on
				// a full client buffer.
				go try(attempt + 1)
			})
		}
		if policy.timeout > 0 {
			timer = time.AfterFunc(policy.timeout, func() { decide(errConfirmTimeout, true) })
		}
		r.publish(ctx, p, intent, attempt, func(err error) {
			if timer != nil { // set before the publish, so before its outcome
				timer.Stop()
			}
			decide(err, false)
		})
	}
	try(1)
}

// publish sends one attempt of intent (the client may retry a lost response
// itself, resending the same bytes, so the same message id); done gets the
// outcome.
func (r *variantRun) publish(ctx context.Context, p *recording.Producer, intent, attempt int, done func(error)) {
	account, amount := intent%store.Accounts, seeded.Amount(r.s.Seed, intent)
	buf, _ := json.Marshal(body{
		Intent: intent, Account: account, Amount: amount,
		Version: strategy.ExpectedVersion(intent),
		ID:      messageID(r.v.ID, r.s.Seed, intent, attempt, account, amount),
	})
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

// drain waits until the broker holds nothing unconsumed and no consumer is
// handling a delivery, or until no intent has made progress (a first ack or
// a first effect) for the scenario's drain period: a slow machine only makes
// the drain longer; a stuck, starved or crash-looping consumer ends it.
func (r *variantRun) drain(ctx context.Context, dest brokers.Destination, consErr chan error) (drained bool, backlog int64, why string, err error) {
	idle := r.s.Drain.D()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	last, lastChange := r.progressed.Load(), time.Now()
	for {
		n, berr := dest.Backlog(ctx)
		if berr == nil {
			backlog = n
			if n == 0 && r.inflight.Load() == 0 && !r.handedBack() {
				// Checked again after the in-flight count: a delivery
				// that finished in between may have been the last.
				if n, berr = dest.Backlog(ctx); berr == nil && n == 0 && r.inflight.Load() == 0 {
					return true, 0, "", nil
				}
			}
		}
		if now := r.progressed.Load(); now != last {
			last, lastChange = now, time.Now()
		} else if time.Since(lastChange) >= idle {
			if loop := r.loopingIntents(); berr == nil && len(loop) > 0 && backlog <= int64(len(loop)) {
				// What is left fails on every delivery and comes back
				// (the backlog may miss one in the middle of its
				// requeue): the broker has delivered everything it will
				// ever deliver for the first time.
				r.leftLooping = loop
				return true, int64(len(loop)), fmt.Sprintf("%d poison messages left looping: each delivery fails and is requeued, and the queue has no delivery limit", len(loop)), nil
			}
			if loop := r.loopingIntents(); berr == nil && len(loop) > 0 {
				// More is waiting, but only the looping failed messages
				// come: they hold the consumers' prefetch (a classic
				// queue requeues at the head). A finding, not a failure.
				r.leftLooping, r.starved = loop, true
				return false, backlog, fmt.Sprintf("starved: %d messages waited behind %d poison messages that loop (each delivery fails and is requeued, the queue has no delivery limit) and made no progress in %s", backlog-int64(len(loop)), len(loop), idle), nil
			}
			why = fmt.Sprintf("no intent was acked or applied for the first time in %s", idle)
			if berr != nil {
				why += fmt.Sprintf(" (the broker did not say what it still holds: %v)", berr)
			}
			return false, backlog, why, nil
		}
		select {
		case <-ctx.Done():
			return false, backlog, "", ctx.Err()
		case err := <-consErr:
			return false, backlog, "", err
		case <-tick.C:
		}
	}
}

// progressOn notes that intent reached an ack or an effect; the first time
// it does counts as progress.
func (r *variantRun) progressOn(intent int, what uint8) {
	if intent < 1 || intent >= len(r.done) {
		return
	}
	r.mu.Lock()
	first := r.done[intent]&what == 0
	r.done[intent] |= what
	r.mu.Unlock()
	if first {
		r.progressed.Add(1)
	}
}

// interruptBudget is what cleaning up and reading the store may take,
// in all, after Ctrl-C.
const interruptBudget = time.Second

// shutdownCtx bounds a shutdown step by the run's hard deadline; it is not
// cancelled with ctx, so a run cut short still cleans up and reads its
// store. After Ctrl-C (ctx cancelled, not past its deadline) every
// shutdown step together gets interruptBudget from the first one, so that
// a store or broker that stopped answering cannot hold one Ctrl-C up.
func (r *variantRun) shutdownCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	hard := r.hard
	if errors.Is(ctx.Err(), context.Canceled) {
		r.interruptOnce.Do(func() { r.interruptHard = time.Now().Add(interruptBudget) })
		if hard.IsZero() || r.interruptHard.Before(hard) {
			hard = r.interruptHard
		}
	}
	if hard.IsZero() || time.Until(hard) < 200*time.Millisecond {
		hard = time.Now().Add(200 * time.Millisecond) // past the deadline: a last short chance
	}
	return context.WithDeadline(context.WithoutCancel(ctx), hard)
}
