// Package runner wires one scenario run: it starts the broker, runs every
// variant's producer and consumers against it while the faults fire and the
// history records, drains, audits each store, and hands everything to the
// checker.
package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/brokers/kafka"
	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/scenario"
	"github.com/dqbench/dqbench/store"
)

// ErrDeadline is returned when a run does not finish by its deadline.
var ErrDeadline = errors.New("the run did not finish by its deadline")

// Progress counts a run's work as it happens, for a progress line.
type Progress struct {
	Total     atomic.Int64 // intents to publish, over all variants
	Published atomic.Int64 // publishes confirmed or failed
	Consumed  atomic.Int64 // deliveries acked
	Faults    atomic.Int64 // faults injected
}

// Result is everything a run produced: the raw material (history and audits)
// and the checker's judgement of it.
type Result struct {
	Scenario *scenario.Scenario
	Meta     check.Meta
	Events   []history.Event
	Audits   map[string]store.Audit
	Run      check.Run
}

// Run runs s. progress may be nil. The error is non-nil only when the run
// could not be completed (broker unreachable, deadline passed, store
// failure); failed expectations are in the result.
func Run(ctx context.Context, s *scenario.Scenario, progress *Progress) (*Result, error) {
	if progress == nil {
		progress = &Progress{}
	}
	deadline := s.Deadline.D()
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	start := time.Now()

	b, err := openBroker(ctx, s)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w (%s): %v", ErrDeadline, deadline, err)
		}
		return nil, err
	}
	defer b.Close()

	dir, err := os.MkdirTemp("", "dqbench-stores-")
	if err != nil {
		return nil, fmt.Errorf("temporary directory for the stores: %w", err)
	}
	defer os.RemoveAll(dir)

	rec := history.NewRecorder(start)
	runID := fmt.Sprintf("%s-%d", safeName(s.Name), start.UnixNano()%1e9)
	progress.Total.Store(int64(s.Messages * len(s.Variants)))

	audits := make(map[string]store.Audit, len(s.Variants))
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, len(s.Variants))
	for i, v := range s.Variants {
		wg.Add(1)
		go func() {
			defer wg.Done()
			vr := &variantRun{
				s: s, v: v, broker: b, rec: rec.Variant(v.Name), progress: progress,
				dbPath: filepath.Join(dir, fmt.Sprintf("variant-%d.db", i)),
				name:   runID + "-" + safeName(v.Name),
			}
			audit, err := vr.run(ctx)
			if err != nil {
				errs[i] = fmt.Errorf("variant %s: %w", v.Name, err)
				cancel() // one broken variant ends the run
				return
			}
			mu.Lock()
			audits[v.Name] = audit
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := firstError(errs); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("%w (%s): %d of %d publishes ended, %d deliveries acked, %d faults injected; raise deadline in the scenario or --timeout, or lower messages",
				ErrDeadline, deadline, progress.Published.Load(), progress.Total.Load(), progress.Consumed.Load(), progress.Faults.Load())
		}
		return nil, err
	}

	meta := check.Meta{
		Scenario: s.Name, Seed: s.Seed, Messages: s.Messages,
		Broker: b.Name(), Duration: time.Since(start),
	}
	events := rec.Events()
	return &Result{
		Scenario: s, Meta: meta, Events: events, Audits: audits,
		Run: check.Judge(s, meta, events, audits),
	}, nil
}

func openBroker(ctx context.Context, s *scenario.Scenario) (brokers.Broker, error) {
	switch s.Broker.Kind {
	case "kafka":
		if s.Broker.Mode == "external" {
			return kafka.Connect(ctx, s.Broker.Addresses)
		}
		return kafka.StartEmbedded()
	}
	return nil, fmt.Errorf("broker kind %q is not supported by this build", s.Broker.Kind)
}

// firstError prefers a real cause over the cancellations it caused.
func firstError(errs []error) error {
	var canceled error
	for _, err := range errs {
		if err == nil {
			continue
		}
		if errors.Is(err, context.Canceled) {
			canceled = err
			continue
		}
		return err
	}
	return canceled
}

var unsafeChars = regexp.MustCompile(`[^a-zA-Z0-9._-]+`)

func safeName(s string) string {
	return strings.Trim(unsafeChars.ReplaceAllString(s, "_"), "_")
}
