// Package sweep runs one scenario over many seeds (and repeats of each
// seed), a few runs at a time, and folds each judged run into a Summary:
// the distribution of every count per variant, and the runs that failed,
// each with the command that runs it again. It keeps only these
// aggregates and the failing runs in memory. It sits after check in the
// pipeline: each run is runner.Run then check.Judge, as "dqbench run" does.
package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/leftover"
	"github.com/dqbench/dqbench/runner"
	"github.com/dqbench/dqbench/savedrun"
	"github.com/dqbench/dqbench/scenario"
)

// RunFunc runs one scenario: runner.Run, or a fake in tests.
type RunFunc func(ctx context.Context, s *scenario.Scenario, opts runner.Options) (*runner.Result, error)

// Config is one sweep.
type Config struct {
	// Seeds are the whole sweep's seeds, SeedSpec the --seeds they came
	// from; Shard picks this process's slice of them.
	Seeds    []int64
	SeedSpec string
	Shard    Shard
	// Repeat is how many times each seed runs (at least 1).
	Repeat int
	// Parallel is how many runs go at once (at least 1). Each run starts
	// its own embedded broker; runs on a shared external broker keep
	// their topics and queues apart by name, as "dqbench run" does.
	Parallel int
	// Scenario returns a scenario of the run's own, with the flags applied
	// and seed as its seed.
	Scenario func(seed int64) (*scenario.Scenario, error)
	// Run runs one scenario (runner.Run).
	Run RunFunc
	// Reproduce is the command line that runs seed again.
	Reproduce func(seed int64) string
	// Out, when set, keeps the failing runs (every run with KeepAll) as
	// "dqbench run --out" does, each in Out/<scenario>-seed-S[-repeat-R].
	Out     string
	KeepAll bool
	// Progress, when set, is kept up to date.
	Progress *Progress
	// Warn receives what a person should know that is not in the report:
	// what could not be cleaned up, a run that could not be saved.
	Warn io.Writer
}

// RunName is the directory a run of scenario name is saved in under --out.
func RunName(name string, id RunID, repeat int) string {
	if repeat > 1 {
		return fmt.Sprintf("%s-seed-%d-repeat-%d", name, id.Seed, id.Repeat)
	}
	return fmt.Sprintf("%s-seed-%d", name, id.Seed)
}

// CheckOut refuses an --out that already holds runs of scenario name,
// unless force: a sweep saves runs as it goes and must not stop half-way
// on a name taken.
func CheckOut(out, name string, force bool) error {
	if out == "" || force {
		return nil
	}
	taken, _ := filepath.Glob(filepath.Join(out, name+"-seed-*", savedrun.HistoryFile))
	if len(taken) > 0 {
		return fmt.Errorf("--out %s already holds runs of %s (%s); choose another --out, remove them, or add --force to overwrite them",
			out, name, filepath.Dir(taken[0]))
	}
	return nil
}

// Run runs the sweep and returns its summary: also when ctx ends it early
// (Ctrl-C), then of the runs that finished, marked interrupted. The error
// is a bug in dqbench that a run met (runner.ErrInternal), or a scenario
// that cannot be prepared at all; the runs that failed are in the summary.
func Run(ctx context.Context, cfg Config) (Summary, error) {
	if len(cfg.Seeds) == 0 {
		return Summary{}, errors.New("no seeds to run")
	}
	cfg.Repeat, cfg.Parallel = max(cfg.Repeat, 1), max(cfg.Parallel, 1)
	if cfg.Warn == nil {
		cfg.Warn = io.Discard
	}
	first, err := cfg.Scenario(cfg.Seeds[0])
	if err != nil {
		return Summary{}, err
	}
	seeds := cfg.Shard.Of(cfg.Seeds)
	var sweeps [][]scenario.SweepExpect
	for i := range first.Variants {
		sweeps = append(sweeps, first.Variants[i].SweepExpects())
	}
	agg := newAggregate(first.Plan(), sweeps, Summary{
		Scenario: first.Name, Seeds: cfg.SeedSpec, Repeat: cfg.Repeat, Shard: cfg.Shard.String(),
		Messages: first.Messages, Runs: len(seeds) * cfg.Repeat,
	})
	p := cfg.Progress
	if p == nil {
		p = &Progress{}
	}
	p.begin(agg.sum.Runs)
	start := time.Now()

	jobs := make(chan RunID)
	go func() {
		defer close(jobs)
		for _, seed := range seeds {
			for r := 1; r <= cfg.Repeat; r++ {
				select {
				case jobs <- RunID{Seed: seed, Repeat: r}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		internal []error
	)
	for range cfg.Parallel {
		wg.Go(func() {
			for id := range jobs {
				if ctx.Err() != nil {
					return
				}
				o := runOne(ctx, cfg, id)
				mu.Lock()
				for _, w := range o.warnings {
					fmt.Fprintln(cfg.Warn, w)
				}
				if errors.Is(o.err, runner.ErrInternal) {
					internal = append(internal, fmt.Errorf("seed %d repeat %d: %w", id.Seed, id.Repeat, o.err))
				}
				if o.interrupted {
					agg.sum.Interrupted = true
				} else {
					agg.add(id, o.run, cfg.Reproduce(id.Seed), o.saved)
					p.done(o.run.Verdict() != check.VerdictPass)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil && agg.sum.Finished < agg.sum.Runs {
		agg.sum.Interrupted = true
	}
	return agg.finish(time.Since(start)), errors.Join(internal...)
}

// outcome is one run of a sweep, judged.
type outcome struct {
	run   check.Run
	saved string // its directory under --out
	err   error  // what runner.Run returned
	// interrupted: the sweep was stopped while it ran; it is not judged.
	interrupted bool
	warnings    []string
}

// runOne runs one seed's repeat with its history in a temporary file,
// judges it and, when asked to keep it (--out: failing, or every run with
// --keep-all), saves it.
func runOne(ctx context.Context, cfg Config, id RunID) (o outcome) {
	sc, err := cfg.Scenario(id.Seed)
	if err != nil && ctx.Err() != nil {
		o.interrupted = true // stopped while reading the scenario
		return o
	}
	if err != nil {
		o.run = check.Run{Meta: check.Meta{Seed: id.Seed, Error: err.Error()}}
		return o
	}
	sc.Seed = id.Seed
	// In the ledger: a killed sweep's undertaker removes it too.
	hist, err := leftover.CreateTemp("dqbench-history-*.jsonl")
	if err != nil {
		o.run = check.Run{Meta: check.Meta{Scenario: sc.Name, Seed: id.Seed, Error: fmt.Sprintf("temporary history file: %v", err)}}
		return o
	}
	defer func() {
		hist.Close()
		os.Remove(hist.Name())
		leftover.Forget(leftover.Entry{Kind: leftover.File, Name: hist.Name()})
	}()

	res, err := cfg.Run(ctx, sc, runner.Options{History: hist})
	o.err = err
	if ctx.Err() != nil && (res == nil || res.Meta.Incomplete != "" || res.Meta.Error != "") {
		o.interrupted = true
		return o
	}
	if res == nil {
		msg := "no result"
		if err != nil {
			msg = err.Error()
		}
		o.run = check.Run{Meta: check.Meta{Scenario: sc.Name, Seed: id.Seed, Messages: sc.Messages, Error: msg}}
		return o
	}
	for _, c := range res.Cleanup {
		o.warnings = append(o.warnings, fmt.Sprintf("warning: scenario %s seed %d: %v", sc.Name, id.Seed, c))
	}
	if _, err := hist.Seek(0, io.SeekStart); err != nil {
		o.run = check.Run{Meta: res.Meta}
		o.run.Incomplete = fmt.Sprintf("read back the history: %v", err)
		return o
	}
	o.run, err = check.Judge(sc.Plan(), res.Meta, history.ScanRun(hist, res.Meta.Messages), res.Audits)
	if err != nil {
		o.run = check.Run{Meta: res.Meta}
		o.run.Incomplete = fmt.Sprintf("read back the history: %v", err)
	}
	if cfg.Out != "" && (cfg.KeepAll || o.run.Verdict() != check.VerdictPass) {
		path, err := save(cfg, sc, res, &o.run, hist, RunName(sc.Name, id, cfg.Repeat))
		if err != nil {
			o.warnings = append(o.warnings, fmt.Sprintf("warning: scenario %s seed %d: save the run: %v", sc.Name, id.Seed, err))
		}
		o.saved = path
	}
	return o
}

// save copies the run's history to a run directory under cfg.Out and
// writes the rest of the run beside it, for "dqbench check".
func save(cfg Config, sc *scenario.Scenario, res *runner.Result, judged *check.Run, hist *os.File, name string) (string, error) {
	dir, err := savedrun.Create(cfg.Out, name, true)
	if err != nil {
		return "", err
	}
	if _, err := hist.Seek(0, io.SeekStart); err != nil {
		return "", errors.Join(err, dir.Discard())
	}
	if _, err := io.Copy(dir.History, hist); err != nil {
		return "", errors.Join(err, dir.Discard())
	}
	if err := dir.Finish(sc, res.Meta, res.Audits, judged); err != nil {
		return "", err
	}
	return dir.Path, nil
}
