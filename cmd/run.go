package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/report"
	"github.com/dqbench/dqbench/rundir"
	"github.com/dqbench/dqbench/runner"
	"github.com/dqbench/dqbench/scenario"
)

type runOptions struct {
	seed     int64
	messages int
	output   string
	out      string
	timeout  time.Duration
}

func newRunCmd(s Streams) *cobra.Command {
	var o runOptions
	c := &cobra.Command{
		Use:   "run SCENARIO...",
		Short: "Run scenarios and report duplicates and losses per variant",
		Long: `Run runs each scenario (a file path or a built-in name, see "dqbench list"):
it publishes the intents, injects the faults on a schedule fixed by the seed,
drains, audits each variant's store and prints one row per variant with the
counts, then a verdict line per expectation.

` + exitCodesHelp,
		Example: `  dqbench run quickstart
  dqbench run quickstart -o json --seed 7
  dqbench run my-scenario.yaml --messages 10000 --out runs/
  dqbench run quickstart kafka-idempotent-producer -o markdown >> "$GITHUB_STEP_SUMMARY"`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return runScenarios(c.Context(), s, o, args, c.Flags().Changed("seed"))
		},
	}
	f := c.Flags()
	f.Int64Var(&o.seed, "seed", 0, "seed of the fault schedule and amounts (default: the scenario's seed)")
	f.IntVar(&o.messages, "messages", 0, "intents to publish per variant (default: the scenario's messages)")
	addOutputFlag(f, &o.output)
	f.StringVar(&o.out, "out", "", "directory to write each run's history, audit and result into (for \"dqbench check\")")
	f.DurationVar(&o.timeout, "timeout", 0, "deadline of each run, e.g. 90s (default: the scenario's deadline)")
	return c
}

func runScenarios(ctx context.Context, s Streams, o runOptions, args []string, seedSet bool) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	if o.messages < 0 || o.timeout < 0 {
		return withCode(ExitUsage, errors.New("--messages and --timeout must not be negative"))
	}
	if o.messages > 0 {
		if err := scenario.CheckMessages(o.messages); err != nil {
			return withCode(ExitUsage, fmt.Errorf("--messages: %w", err))
		}
	}
	// Every scenario must be valid before anything runs.
	var scs []*scenario.Scenario
	var problems []string
	for _, arg := range args {
		sc, err := scenario.ResolveContext(ctx, arg)
		if err != nil && ctx.Err() != nil {
			return withCode(ExitIncomplete, fmt.Errorf("interrupted: %w", ctx.Err()))
		}
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if seedSet {
			sc.Seed = o.seed
		}
		if o.messages > 0 {
			sc.Messages = o.messages
		}
		if o.timeout > 0 {
			sc.Deadline = scenario.Duration(o.timeout)
		}
		scs = append(scs, sc)
	}
	if len(problems) > 0 {
		return withCode(ExitUsage, errors.New(strings.Join(problems, "\n")))
	}

	var runs []check.Run
	var failures []string
	for _, sc := range scs {
		res, err := runOne(ctx, s, sc)
		if err != nil {
			failures = append(failures, fmt.Sprintf("scenario %s: %v", sc.Name, err))
			if ctx.Err() != nil {
				break // interrupted: run nothing more
			}
			continue
		}
		if o.out != "" {
			dir, err := rundir.Save(o.out, rundir.Run{Scenario: sc, Meta: res.Meta, Events: res.Events, Audits: res.Audits}, sc.Source, res.Run)
			if err != nil {
				return withCode(ExitIncomplete, fmt.Errorf("save run to %s: %w", o.out, err))
			}
			fmt.Fprintf(s.Err, "saved run to %s (re-judge with \"dqbench check %s\")\n", dir, dir)
		}
		runs = append(runs, res.Run)
	}
	if len(runs) > 0 {
		if err := report.Write(s.Out, o.output, runs); err != nil {
			return withCode(ExitIncomplete, err)
		}
	}
	return verdict(runs, failures)
}

// verdict turns judged runs and runs that could not complete into an exit code.
func verdict(runs []check.Run, failures []string) error {
	for _, r := range runs {
		if !r.Valid() {
			failures = append(failures, fmt.Sprintf("scenario %s: the experiment is invalid (see INVALID lines)", r.Scenario))
		}
	}
	if len(failures) > 0 {
		return withCode(ExitIncomplete, errors.New(strings.Join(failures, "\n")))
	}
	if !report.Passed(runs) {
		return withCode(ExitFail, errSilent)
	}
	return nil
}

func runOne(ctx context.Context, s Streams, sc *scenario.Scenario) (*runner.Result, error) {
	progress := &runner.Progress{}
	done := make(chan struct{})
	if s.Terminal {
		go showProgress(s, sc.Name, progress, done)
	}
	res, err := runner.Run(ctx, sc, progress)
	close(done)
	if err != nil && ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, fmt.Errorf("interrupted: %w", ctx.Err())
	}
	return res, err
}

// showProgress writes a progress line to the terminal for runs longer than
// a couple of seconds, and clears it when the run ends.
func showProgress(s Streams, name string, p *runner.Progress, done <-chan struct{}) {
	select {
	case <-done:
		return
	case <-time.After(2 * time.Second):
	}
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		fmt.Fprintf(s.Err, "\r\033[K%s: published %d/%d · consumed %d · faults %d",
			name, p.Published.Load(), p.Total.Load(), p.Consumed.Load(), p.Faults.Load())
		select {
		case <-done:
			fmt.Fprint(s.Err, "\r\033[K")
			return
		case <-t.C:
		}
	}
}
