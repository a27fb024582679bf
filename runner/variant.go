package runner

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/faults"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/recording"
	"github.com/dqbench/dqbench/scenario"
	"github.com/dqbench/dqbench/store"
	"github.com/dqbench/dqbench/strategy"
)

// variantRun is one variant's pipeline: producer, consumers, faults, store.
// Besides what the variant is and where it runs, each part owns its
// fields, in the file that uses them.
type variantRun struct {
	s        *scenario.Scenario
	v        scenario.Variant
	broker   brokers.Broker
	rec      *history.VariantRecorder
	progress *Progress
	counts   *VariantProgress // this variant's part of progress
	storeDir string           // for SQLite files
	name     string           // unique per variant and run
	start    time.Time        // the run's start
	shutdown shutdown         // bounds the steps that end the run (drain.go)
	line     *startLine       // shared by the run's variants (startline.go)
	lineOnce sync.Once

	strat strategy.Instance // the variant's (strategy.go)
	env   strategy.Env

	consumerFaults faults.Consumer        // decides what faults do to a delivery (consume.go)
	kills          *faults.Kills          // a process variant's kill faults (process.go)
	appFaults      *faults.ProducerApp    // producer-app-crash faults, with a producer pattern other than direct (outbox.go)
	appAudit       *history.ProducerAudit // the producer application's store once produce is done (outbox.go)

	slots    slots     // the consumer slots (consume.go)
	flow     flow      // what the deliveries did so far, for the drain (drain.go)
	zombies  zombies   // instances stalled at a crash point (consume.go)
	handBack handBacks // failed deliveries handed back (handback.go)
	stage    *stageRun // the consume-transform-produce stage, if any (stage.go)
}

// run runs the variant, step by step: open the store, open the
// destination and arm the faults, start the consumers, produce, finish
// (drain, record the drain, audit). It returns the store audit whenever
// the store could be read (also after the deadline), and a cleanup error
// apart from the run's own (the broker's and the store's, joined).
func (r *variantRun) run(ctx context.Context) (audit *history.Audit, cleanup, err error) {
	if r.v.Process != nil {
		return r.runProcess(ctx)
	}
	st, closeStore, err := r.openStore(ctx)
	// Runs last: a PostgreSQL store drops its schema here.
	defer func() { cleanup = errors.Join(cleanup, closeStore()) }()
	if err != nil {
		return nil, nil, err
	}
	defer func() { err = errors.Join(err, r.closeStrategy()) }() // after the consumers stop
	dest, err := r.openDestination(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer func() { cleanup = errors.Join(cleanup, r.closeDestination(ctx, dest)) }()
	if err := r.arm(dest); err != nil {
		return nil, nil, err
	}
	if err := r.startConsumers(ctx, dest); err != nil {
		return nil, nil, err
	}
	defer r.slots.stop()
	runErr := r.atStartLine(ctx)
	if runErr == nil {
		runErr = r.produce(ctx, dest, r.s.ProducerFor(r.v))
	}
	audit, err = r.finish(ctx, dest, runErr, ending{
		errs: r.slots.errs, stop: r.stopConsumers, audit: r.auditStore(st), afterFailure: true,
	})
	return audit, nil, err
}

// openStore opens the variant's business store (and Redis, for a strategy
// that keeps markers there) and opens the variant's strategy instance on
// it. closeAll, never nil, closes the stores and returns what could not be
// cleaned up; the strategy instance is closed apart (closeStrategy).
func (r *variantRun) openStore(ctx context.Context) (st store.Store, closeAll func() error, err error) {
	closeAll = func() error { return nil }
	business, err := store.Open(ctx, store.Where{Ref: r.s.StoreFor(r.v), Dir: r.storeDir, Name: r.name, Conns: r.s.ConsumerFor(r.v).Instances,
		Effect: r.v.Effect, Intents: r.s.Messages})
	if err != nil {
		return nil, closeAll, err
	}
	var rd *store.Redis
	closeAll = func() error {
		var err error
		if rd != nil {
			err = r.closeStore(ctx, rd)
		}
		return errors.Join(err, r.closeStore(ctx, business))
	}
	r.env = strategy.Env{Store: business, Params: r.v.Params, Effect: r.v.Effect, Intents: r.s.Messages}
	if desc, _ := catalog.LookupStrategy(r.v.Strategy); desc.NeedsRedis {
		if rd, err = store.OpenRedis(ctx, r.s.Redis, "dqbench:"+r.name+":"); err != nil {
			return nil, closeAll, err
		}
		r.env.Redis = rd
	}
	if r.strat, err = strategy.Open(ctx, r.v.Strategy, r.env); err != nil {
		return nil, closeAll, err
	}
	return business, closeAll, nil
}

// closeStore closes a store (or Redis) within the run's hard deadline,
// and returns what it could not clean up.
func (r *variantRun) closeStore(ctx context.Context, c interface{ Close() error }) error {
	cctx, cancel := r.shutdown.ctx(ctx)
	defer cancel()
	return cleanupOnly(store.CloseBy(cctx, c))
}

// cleanupOnly keeps a close error that left something behind
// (store.ErrCleanup); any other is of no consequence once the run is over.
func cleanupOnly(err error) error {
	if errors.Is(err, store.ErrCleanup) {
		return err
	}
	return nil
}

// openDestination opens the variant's topic or queue with its producer and
// consumer settings (and its stage), and records the broker's limits.
func (r *variantRun) openDestination(ctx context.Context) (brokers.Destination, error) {
	prod, cons := r.s.ProducerFor(r.v), r.s.ConsumerFor(r.v)
	spec := brokers.DestinationSpec{
		Name: r.name, Idempotent: *prod.Idempotent, Acks: prod.Acks, Window: prod.Window,
		Retries:  prod.RetryCount(),
		Prefetch: cons.Prefetch, Instances: cons.Instances, AutoAck: cons.Ack == catalog.AckAuto,
		Settings:   r.s.BrokerSettingsFor(r.v),
		DeadLetter: r.readsDeadLetters(),
	}
	if st := r.s.StageFor(r.v); st != nil {
		spec.Stage = &brokers.StageSpec{Transactional: st.IsTransactional()}
		r.stage = newStageRun(st, r.s.Messages)
	}
	dest, err := r.broker.Open(ctx, spec)
	if err != nil {
		return nil, err
	}
	if lr, ok := dest.(brokers.LimitReporter); ok {
		r.rec.Record(history.Event{Type: history.Limits, Reason: lr.Limits()})
	}
	return dest, nil
}

// closeDestination cleans up the destination, even after the deadline,
// but not past the hard one.
func (r *variantRun) closeDestination(ctx context.Context, dest brokers.Destination) error {
	cctx, cancel := r.shutdown.ctx(ctx)
	defer cancel()
	return dest.Close(cctx)
}

// arm installs every configured fault that can act in this variant, and
// records which.
func (r *variantRun) arm(dest brokers.Destination) error {
	st, _ := catalog.LookupStrategy(r.v.Strategy)
	env := faults.Env{Dest: dest, Strategy: st, Consumer: &r.consumerFaults, Kills: r.kills, Fired: func(e history.Event) {
		r.progress.fired(r.start, e.Fault)
		r.rec.Record(e)
	}}
	if r.stage != nil {
		env.Stage = r.stage.faults
	}
	env.Producer = r.producerAppFaults()
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

// startConsumers starts the consumer slots, the stage and the dead-letter
// reader; they run until the drain ends (stopConsumers).
func (r *variantRun) startConsumers(ctx context.Context, dest brokers.Destination) error {
	cons := r.s.ConsumerFor(r.v)
	consCtx, stop := context.WithCancel(ctx)
	r.slots = slots{
		ctx: consCtx, stop: stop, errs: make(chan error, 1), dest: dest,
		ackFirst: cons.Ack == catalog.AckBeforeProcess || cons.Ack == catalog.AckAuto,
		seen:     recording.NewDeliveries(r.s.Messages),
	}
	r.flow.init(r.s.Messages)
	if r.stage != nil {
		if err := r.startStage(dest); err != nil {
			stop()
			return err
		}
	}
	for range cons.Instances {
		r.startSlot()
	}
	if r.readsDeadLetters() {
		r.slots.wg.Go(func() {
			if err := r.readDeadLetters(consCtx, dest); err != nil {
				r.slots.fail(err)
			}
		})
	}
	return nil
}

// readsDeadLetters says whether the variant's broker dead-letters what its
// consumer refuses (on_failure: reject) or what was delivered too often
// (the consumer's delivery_limit, or a limit in the broker's settings such
// as NATS max_deliver): the runner then reads the dead letters.
func (r *variantRun) readsDeadLetters() bool {
	cons := r.s.ConsumerFor(r.v)
	if cons.OnFailure == catalog.FailReject || cons.DeliveryLimit > 0 {
		return true
	}
	l, ok := r.s.BrokerSettingsFor(r.v).(catalog.DeliveryLimiter)
	return ok && l.LimitsDeliveries()
}

// stopConsumers stops everything startConsumers started and waits for it.
func (r *variantRun) stopConsumers() {
	r.slots.stop()
	r.slots.wg.Wait()
}

// auditStore reads the business store's final state. A local store cannot
// hang, so its audit is not cut short; a store server that stopped
// answering is given until the hard deadline.
func (r *variantRun) auditStore(st store.Store) func(ctx context.Context) (history.Audit, error) {
	return func(ctx context.Context) (history.Audit, error) {
		actx, cancel := context.WithoutCancel(ctx), context.CancelFunc(func() {})
		if !store.Local(st) {
			actx, cancel = r.shutdown.ctx(ctx)
		}
		defer cancel()
		return st.Audit(actx)
	}
}

// ending is what finish needs of a variant's consumers and store, which
// differ between built-in and process variants.
type ending struct {
	errs  <-chan error // the consumers' first fatal error
	stop  func()       // stops the consumers and waits for them
	audit func(ctx context.Context) (history.Audit, error)
	// afterFailure: audit the store after a failed run too (a run cut
	// short by its deadline or by Ctrl-C is always audited).
	afterFailure bool
}

// finish ends a variant once its producer is done (runErr: how that
// ended): it drains, stops the consumers, records the drain and audits the
// store. The store is read even when the run was cut short, so that what
// was recorded can still be judged.
func (r *variantRun) finish(ctx context.Context, dest brokers.Destination, runErr error, e ending) (*history.Audit, error) {
	var end drainEnd
	if runErr == nil {
		end, runErr = r.drain(ctx, dest, e.errs)
	}
	e.stop()
	select {
	case cerr := <-e.errs:
		// A store that stopped answering is why the run did not finish,
		// rather than the deadline it made the run reach.
		if runErr == nil || errors.Is(cerr, store.ErrStalled) {
			runErr = cerr
		}
	default:
	}
	switch {
	case ctx.Err() != nil:
		end.why = "the run ended: " + ctx.Err().Error()
	case runErr != nil:
		end.why = runErr.Error()
	}
	r.rec.Record(history.Event{Type: history.Drain, Drained: end.drained, Backlog: end.backlog, Reason: end.why, Intents: end.looping, Starved: end.starved})
	if runErr != nil && ctx.Err() == nil && !e.afterFailure {
		return nil, runErr
	}
	a, err := e.audit(ctx)
	if err != nil {
		return nil, errors.Join(runErr, err)
	}
	a.Producer = r.appAudit
	if runErr != nil && ctx.Err() != nil && !errors.Is(runErr, store.ErrStalled) {
		runErr = ctx.Err()
	}
	return &a, runErr
}
