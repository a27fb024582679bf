// Package runner wires one scenario run: it starts the broker, runs every
// variant's producer and consumers against it while the faults fire and the
// history records, drains and audits each store. It judges nothing: the
// history and the audits go to package check.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/brokers/all"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/leftover"
	"github.com/dqbench/dqbench/scenario"
	"github.com/dqbench/dqbench/store"
)

// ErrDeadline marks a run that did not finish by its deadline.
var ErrDeadline = errors.New("the run did not finish by its deadline")

// ErrInterrupted marks a run stopped by its caller (Ctrl-C, SIGTERM).
var ErrInterrupted = errors.New("interrupted")

// ErrInternal marks a bug in dqbench (a panic in a variant), as opposed to
// a broker or store failure.
var ErrInternal = errors.New("internal error")

// shutdownBudget is the part of a run's deadline kept for stopping the
// clients, cleaning up on the broker and reading the stores, so that the
// deadline is hard: the work stops this long before it.
func shutdownBudget(deadline time.Duration) time.Duration {
	return min(max(deadline/10, 200*time.Millisecond), 5*time.Second)
}

// Options are a run's outputs besides its result.
type Options struct {
	// History receives the history as it is recorded (JSON lines).
	History io.Writer
	// Progress may be nil.
	Progress *Progress
}

// Result is what a run produced besides its history: what it was, and each
// variant's final store audit.
type Result struct {
	Meta   history.Meta
	Audits map[string]history.Audit
	// Cleanup lists what could not be removed from an external broker.
	Cleanup []error
}

// Run runs s, streaming its history to opts.History. It always returns a
// Result, so that every run leaves a report: a run that ends early
// (deadline, interrupted, a variant whose broker connection, store or
// consumer failed) returns what it recorded, with Meta.Incomplete saying
// why, and the error; a run that could not start (broker unreachable)
// returns Meta.Error and the error, and nothing to count.
func Run(ctx context.Context, s *scenario.Scenario, opts Options) (*Result, error) {
	progress := opts.Progress
	if progress == nil {
		progress = &Progress{}
	}
	deadline := s.Deadline.D()
	parent := ctx
	start := time.Now()
	hard := start.Add(deadline)
	rec := history.NewRecorder(start, opts.History)
	ctx, cancel, recorded := interruptible(parent, hard.Add(-shutdownBudget(deadline)), rec, s)
	defer cancel()
	defer recorded()

	b, err := openBroker(parent, ctx, s)
	if err != nil {
		broker := strings.TrimSpace(fmt.Sprintf("%s %s", s.Broker.Kind, s.Broker.Mode))
		return notStarted(s, start, broker, err)
	}
	defer b.Close()
	dir, err := leftover.MkdirTemp("dqbench-stores-")
	if err != nil {
		return notStarted(s, start, b.Name(), fmt.Errorf("temporary directory for the stores: %w", err))
	}
	defer func() {
		if os.RemoveAll(dir) == nil {
			leftover.Forget(leftover.Entry{Kind: leftover.Dir, Name: dir})
		}
	}()

	progress.Begin(s)
	base := &variantRun{s: s, broker: b, progress: progress, start: start, storeDir: dir, shutdown: shutdown{hard: hard}}
	res, errs := runVariants(ctx, cancel, rec, base)
	recorded() // before the history closes
	res.Meta = history.Meta{
		Scenario: s.Name, Seed: s.Seed, Messages: s.Messages,
		Broker: b.Name(), Duration: time.Since(start), Provenance: provenance(s, b),
	}
	if err := rec.Close(); err != nil {
		err = fmt.Errorf("write history: %w", err)
		res.Meta.Incomplete = err.Error()
		return res, err
	}
	if cause := endCause(parent, ctx); cause != nil {
		err := cutShort(cause, deadline, start, progress, errs)
		res.Meta.Incomplete = err.Error()
		return res, err
	}
	if err := firstError(errs); err != nil {
		// What was recorded until a variant failed is still reported.
		res.Meta.Incomplete = err.Error()
		return res, err
	}
	return res, nil
}

// openBroker checks the run's stores, then opens its broker. A store that
// cannot serve the run (its server down, no such database, a refused
// login) fails it before any variant starts, as an unreachable broker
// does: nothing ran, nothing to count. An error that came with the run's
// end (deadline, interrupt) says so.
func openBroker(parent, ctx context.Context, s *scenario.Scenario) (brokers.Broker, error) {
	ended := func(err error) error {
		if cause := endCause(parent, ctx); cause != nil {
			return fmt.Errorf("%w (%s): %v", cause, s.Deadline.D(), err)
		}
		return err
	}
	if err := checkStores(ctx, s); err != nil {
		return nil, ended(err)
	}
	b, err := all.Open(ctx, brokers.Config{
		Kind: s.Broker.Kind, Mode: s.Broker.Mode, Addresses: s.Broker.Addresses, Settings: s.Broker.Settings,
	})
	if err != nil {
		return nil, ended(err)
	}
	return b, nil
}

// checkStores checks every store the scenario's variants use (each
// PostgreSQL once, and Redis when a variant's strategy needs it) before
// any variant starts; the error wraps store.ErrUnusable.
func checkStores(ctx context.Context, s *scenario.Scenario) error {
	seen := map[string]bool{}
	redis := false
	for _, v := range s.Variants {
		if ref := s.StoreFor(v); !seen[ref] {
			seen[ref] = true
			if err := store.Check(ctx, ref); err != nil {
				return err
			}
		}
		desc, _ := catalog.LookupStrategy(v.Strategy)
		redis = redis || desc.NeedsRedis
	}
	if redis {
		return store.CheckRedis(ctx, s.Redis)
	}
	return nil
}

// interruptible is the run's context, ending at deadline, whose
// cancellation by the caller (parent: Ctrl-C, SIGTERM) the run sees only
// once an interrupted event is in every variant's history: it comes
// before anything the interruption makes a variant record (record first,
// judge later: the checker, and "dqbench check" on a saved run, read the
// interruption from the history). cancel ends the context, as one broken
// variant does; wait returns once an interruption that began is recorded
// (call it before the history closes; again, it does nothing).
func interruptible(parent context.Context, deadline time.Time, rec *history.Recorder, s *scenario.Scenario) (_ context.Context, cancel context.CancelFunc, wait func()) {
	ctx, cancel := context.WithDeadline(context.WithoutCancel(parent), deadline)
	done := make(chan struct{})
	stop := context.AfterFunc(parent, func() {
		defer close(done)
		for _, v := range s.Variants {
			rec.Variant(v.Name).Record(history.Event{Type: history.Interrupted, Reason: "the run was stopped (Ctrl-C or SIGTERM)"})
		}
		cancel()
	})
	return ctx, cancel, sync.OnceFunc(func() {
		if !stop() {
			<-done
		}
	})
}

// notStarted is the result of a run that could not start.
func notStarted(s *scenario.Scenario, start time.Time, broker string, err error) (*Result, error) {
	return &Result{Meta: history.Meta{
		Scenario: s.Name, Seed: s.Seed, Messages: s.Messages,
		Broker: broker, Duration: time.Since(start), Error: err.Error(),
		Provenance: provenance(s, nil),
	}}, err
}

// runVariants runs every variant of the scenario in parallel, each like
// base with its own variant, name and recorder, and returns their audits and
// cleanup failures, and each one's error (by variant). One broken variant
// ends the run (cancel).
func runVariants(ctx context.Context, cancel context.CancelFunc, rec *history.Recorder, base *variantRun) (*Result, []error) {
	s := base.s
	runID := fmt.Sprintf("%s-%d", s.Name, base.start.UnixNano()%1e9)
	res := &Result{Audits: make(map[string]history.Audit, len(s.Variants))}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, len(s.Variants))
	line := newStartLine(len(s.Variants))
	for i, v := range s.Variants {
		wg.Go(func() {
			vr := &variantRun{
				s: s, v: v, broker: base.broker, rec: rec.Variant(v.Name), progress: base.progress, counts: base.progress.variant(i),
				start: base.start, shutdown: shutdown{hard: base.shutdown.hard}, line: line,
				storeDir: base.storeDir,
				name:     fmt.Sprintf("%s-%d", runID, i),
			}
			audit, cleanup, err := vr.runGuarded(ctx)
			mu.Lock()
			defer mu.Unlock()
			if cleanup != nil {
				res.Cleanup = append(res.Cleanup, fmt.Errorf("variant %s: %w", v.Name, cleanup))
			}
			if audit != nil {
				res.Audits[v.Name] = *audit
			}
			if err != nil {
				errs[i] = fmt.Errorf("variant %s: %w", v.Name, err)
				cancel() // one broken variant ends the run
			}
		})
	}
	wg.Wait()
	return res, errs
}

// cutShort is the error of a run that ended early (cause: its deadline or
// an interruption), saying how far it got and why: a store that stopped
// answering (one of the variants' errs), or past the deadline, what to do.
func cutShort(cause error, deadline time.Duration, start time.Time, progress *Progress, errs []error) error {
	limit := ""
	if errors.Is(cause, ErrDeadline) {
		limit = fmt.Sprintf(" (%s)", deadline)
	}
	err := fmt.Errorf("%w%s: %d of %d publishes ended, %d deliveries acked, %d faults injected",
		cause, limit, progress.Published.Load(), progress.Total.Load(), progress.Consumed.Load(), progress.Faults.Load())
	if stalled := stalledStore(errs); stalled != nil {
		return fmt.Errorf("%w; %w", err, stalled)
	}
	if !errors.Is(cause, ErrDeadline) {
		return err
	}
	heard := time.Duration(progress.heard.Load())
	silent := time.Since(start) - heard
	if silent > 2*time.Second && progress.Published.Load() < progress.Total.Load() || silent > 5*time.Second {
		if f := progress.lastFault.Load(); f != nil && f.at >= heard-faultSilenceMargin {
			// The silence began with a fault of the run's own: name it
			// rather than blame the broker.
			return fmt.Errorf("%w; nothing was confirmed, delivered or acked in the last %s, since fault %s was injected (at %s): the fault's doing (a partition longer than what was left of the run, a stalled consumer), not the broker's; shorten the fault or raise deadline",
				err, silent.Round(100*time.Millisecond), f.name, f.at.Round(time.Millisecond))
		}
		return fmt.Errorf("%w; the broker stopped answering: nothing was confirmed, delivered or acked in the last %s", err, silent.Round(100*time.Millisecond))
	}
	return fmt.Errorf("%w; raise deadline in the scenario or --timeout", err)
}

// faultSilenceMargin: a fault injected this long before the broker was
// last heard from still counts as what began the silence (the last ack
// may be recorded just after the fault that follows it).
const faultSilenceMargin = 100 * time.Millisecond

// endCause says why ctx ended, if the run was cut short: the caller's
// cancellation or the run's deadline.
func endCause(parent, ctx context.Context) error {
	switch {
	case parent.Err() != nil:
		return ErrInterrupted
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return ErrDeadline
	}
	return nil
}

// runGuarded runs the variant and turns a panic into an error, so that a
// bug in one variant still lets the run clean up.
func (r *variantRun) runGuarded(ctx context.Context) (audit *history.Audit, cleanup, err error) {
	defer r.leaveStartLine()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v; please report it with the scenario file\n%s", ErrInternal, p, debug.Stack())
		}
	}()
	return r.run(ctx)
}

// stalledStore is the first variant error that says a store stopped
// answering: then it, not the broker, is why the run did not finish.
func stalledStore(errs []error) error {
	for _, err := range errs {
		if errors.Is(err, store.ErrStalled) {
			return err
		}
	}
	return nil
}

// firstError prefers a real cause over the cancellations it caused.
func firstError(errs []error) error {
	var canceled error
	for _, err := range errs {
		if err == nil {
			continue
		}
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			canceled = err
			continue
		}
		return err
	}
	return canceled
}
