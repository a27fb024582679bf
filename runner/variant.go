package runner

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/faults"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/scenario"
	"github.com/dqbench/dqbench/store"
	"github.com/dqbench/dqbench/strategy"
)

// errCrash ends a consumer at a crash point.
var errCrash = errors.New("consumer crashed by fault")

// variantRun is one variant's pipeline: producer, consumers, faults, store.
type variantRun struct {
	s        *scenario.Scenario
	v        scenario.Variant
	broker   brokers.Broker
	rec      *history.VariantRecorder
	progress *Progress
	dbPath   string
	name     string

	strat   strategy.Strategy
	db      *sql.DB
	crashes map[faults.Point][]crashFault
	gens    atomic.Int64
	// activity counts deliveries and acks, so the drain can tell a slow
	// consumer from a stuck one.
	activity atomic.Int64

	mu         sync.Mutex
	deliveries map[int]int // intent → deliveries so far (the attempt number of consumer faults)
}

type crashFault struct {
	name  string
	sched faults.Schedule
}

// body is the message payload: one business intent.
type body struct {
	Intent  int   `json:"intent"`
	Account int   `json:"account"`
	Amount  int64 `json:"amount"`
}

func (r *variantRun) run(ctx context.Context) (store.Audit, error) {
	prod, cons := r.s.ProducerFor(r.v), r.s.ConsumerFor(r.v)
	var ok bool
	if r.strat, ok = strategy.Lookup(r.v.Strategy); !ok {
		return store.Audit{}, fmt.Errorf("unknown strategy %q", r.v.Strategy)
	}
	db, err := store.Open(ctx, r.dbPath)
	if err != nil {
		return store.Audit{}, err
	}
	defer db.Close()
	r.db = db
	if err := r.strat.Setup(ctx, db); err != nil {
		return store.Audit{}, fmt.Errorf("set up strategy %s: %w", r.strat.Name(), err)
	}
	r.deliveries = map[int]int{}

	ch, err := r.broker.Open(ctx, brokers.ChannelSpec{
		Name: r.name, Partitions: r.s.Broker.Partitions,
		Idempotent: *prod.Idempotent, Acks: prod.Acks, Window: prod.Window,
		Prefetch: cons.Prefetch,
	})
	if err != nil {
		return store.Audit{}, err
	}
	defer func() {
		// Clean up even after the deadline, but not forever.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = ch.Close(cctx)
	}()
	if err := r.installFaults(ch); err != nil {
		return store.Audit{}, err
	}

	// Consumers run until the drain ends.
	consCtx, stopConsumers := context.WithCancel(ctx)
	defer stopConsumers()
	var wg sync.WaitGroup
	consErr := make(chan error, cons.Instances)
	for range cons.Instances {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.consume(consCtx, ch, cons.Ack == "before-process"); err != nil {
				consErr <- err
				stopConsumers()
			}
		}()
	}

	if err := r.produce(ctx, ch, prod.Window); err != nil {
		stopConsumers()
		wg.Wait()
		return store.Audit{}, err
	}
	drained, err := r.drain(ctx, ch, consErr)
	stopConsumers()
	wg.Wait()
	if err != nil {
		return store.Audit{}, err
	}
	r.rec.Record(history.Event{Type: history.Drain, Drained: drained})
	select {
	case err := <-consErr:
		return store.Audit{}, err
	default:
	}
	return store.ReadAudit(context.WithoutCancel(ctx), db)
}

// installFaults prepares the consumer crash points and asks the broker for
// the faults only it can inject.
func (r *variantRun) installFaults(ch brokers.Channel) error {
	r.crashes = map[faults.Point][]crashFault{}
	for _, f := range r.s.Faults {
		if !check.Applies(f, r.v) {
			continue
		}
		sched := faults.Schedule{
			Seed: r.s.Seed, Fault: f.Name, Every: f.Every,
			Probability: f.Probability, MaxAttempt: f.MaxAttempt,
		}
		switch f.Type {
		case faults.ConsumerCrash:
			p := faults.Point(f.At)
			r.crashes[p] = append(r.crashes[p], crashFault{name: f.Name, sched: sched})
		case faults.ProduceResponseLost:
			loser, ok := ch.(brokers.ProduceResponseLoser)
			if !ok {
				return fmt.Errorf("fault %s: broker %s cannot lose produce responses", f.Name, r.broker.Name())
			}
			name := f.Name
			loser.LoseProduceResponses(sched.Fires, func(intent, attempt int) {
				r.progress.Faults.Add(1)
				r.rec.Record(history.Event{Type: history.Fault, Fault: name, Intent: intent, Attempt: attempt})
			})
		default:
			return fmt.Errorf("fault type %q is not supported by this build", f.Type)
		}
	}
	return nil
}

// produce publishes every intent once, with at most window unconfirmed, and
// waits for the confirms; it gives up at the run's deadline.
func (r *variantRun) produce(ctx context.Context, ch brokers.Channel, window int) error {
	p, err := ch.Producer(ctx)
	if err != nil {
		return err
	}
	sem := make(chan struct{}, window)
	var wg sync.WaitGroup
publish:
	for intent := 1; intent <= r.s.Messages; intent++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			break publish
		}
		b, _ := json.Marshal(body{Intent: intent, Account: intent % store.Accounts, Amount: amount(r.s.Seed, intent)})
		r.rec.Record(history.Event{Type: history.Publish, Intent: intent, Attempt: 1})
		wg.Add(1)
		p.Publish(ctx, brokers.Message{Intent: intent, Key: brokers.Key(intent), Body: b}, func(err error) {
			if err != nil {
				r.rec.Record(history.Event{Type: history.PubFailed, Intent: intent, Reason: err.Error()})
			} else {
				r.rec.Record(history.Event{Type: history.Confirm, Intent: intent})
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
	select {
	case <-confirmed:
	case <-time.After(5 * time.Second):
	}
	return ctx.Err()
}

// amount is the intent's business amount, 1..100, fixed by the seed.
func amount(seed int64, intent int) int64 {
	x := uint64(seed)*0x9e3779b97f4a7c15 + uint64(intent)
	x ^= x >> 31
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 29
	return int64(x%100) + 1
}

// drain waits until the broker has nothing left to deliver, or until the
// consumers have made no progress (no delivery, no ack) for the scenario's
// drain period: a slow machine only makes the drain longer, a stuck or
// starved consumer ends it.
func (r *variantRun) drain(ctx context.Context, ch brokers.Channel, consErr chan error) (bool, error) {
	idle := r.s.Drain.D()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	last, lastChange := r.activity.Load(), time.Now()
	for {
		if ok, err := ch.Drained(ctx); err == nil && ok {
			return true, nil
		}
		if now := r.activity.Load(); now != last {
			last, lastChange = now, time.Now()
		} else if time.Since(lastChange) >= idle {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case err := <-consErr:
			consErr <- err
			return false, nil
		case <-tick.C:
		}
	}
}
