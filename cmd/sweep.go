package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/scenario"
	seedsweep "github.com/dqbench/dqbench/sweep" // cmd has a func sweep: clean's
)

type sweepOptions struct {
	runOptions
	seeds    string
	repeat   int
	parallel int
	shard    string
	keepAll  bool
	// expect are sweep expectations given as flags: "VARIANT: COUNT
	// EXPECTATION", each in place of the scenario's on that count.
	expect []string
}

func newSweepCmd(s Streams, runF runFunc) *cobra.Command {
	o := sweepOptions{runOptions: runOptions{run: runF}}
	c := &cobra.Command{
		Use:   "sweep SCENARIO --seeds FROM..TO",
		Short: "Run a scenario over many seeds and report each count's distribution",
		Long: `Sweep runs one scenario (a built-in name or a file, as "dqbench run" takes)
once per seed of --seeds, --repeat times each, --parallel runs at a time
(each run starts its own embedded broker), and reports per variant and count
the min, median, 99th percentile and max over the runs with a small
histogram, how often each expectation held, every run that did not pass
with the command that runs it again ("dqbench run SCENARIO --seed S"), and
the counts that moved between repeats of one seed although the variant does
not declare them in varies:.

Expectations over the sweep's runs, not over one run: a variant's
sweep_expect: in the scenario (e.g. duplicates: "> 0 in at least 95% of
runs", lost: "== 0 in every run"), and --expect "VARIANT: COUNT
EXPECTATION", in place of the scenario's on that count. One that does not
hold in enough valid runs fails the sweep (exit 1); the report lists the
runs it missed, each with its reproducer.

Only these aggregates and the failing runs are kept in memory. --out DIR
saves the failing runs as "dqbench run --out" does (--keep-all: every run),
each in DIR/<scenario>-seed-S, for "dqbench check".

-o html, or --html FILE beside another -o, writes a self-contained page:
per variant and count the numbers and a histogram of the runs by value,
the bars of failing runs marked and linked to their reproducers.

--shard I/N runs the I-th of N disjoint slices of the seeds (consecutive
seeds, every repeat of a seed in its slice): run each on its own machine with
-o json (or --json FILE) and "dqbench merge" the files into the report and exit code of the
whole sweep.

Progress goes to stderr: a line redrawn on a terminal, else a line every
10 s. Ctrl-C stops every run and still reports the runs that finished
(exit 3).

` + envHelp() + `

` + securityHelp() + `

Exit codes (as run's, over every run):
  0  every run passed, and every sweep expectation held
  1  an expectation failed in some run, or a sweep expectation failed
  2  invalid scenario, flags or usage
  3  a run could not start, was cut short or does not count; interrupted
  4  internal error: a bug in dqbench (please report it)`,
		Example: `  dqbench sweep quickstart --seeds 1..200 --parallel 2
  dqbench sweep mqtt-client-qos2 --seeds 1..100 --repeat 3
  dqbench sweep quickstart --seeds 1..200 --expect 'none: duplicates > 0 in at least 95% of runs'
  dqbench sweep my-scenario.yaml --seeds 1..50 --messages 500 --out runs/
  dqbench sweep quickstart --seeds 1..200 --html sweep.html
  dqbench sweep quickstart --seeds 1..200 -o junit > dqbench-sweep-junit.xml
  dqbench sweep quickstart --seeds 1..200 -o markdown >> "$GITHUB_STEP_SUMMARY"
  dqbench sweep quickstart --seeds 1..200 -o json > sweep.json
  dqbench sweep quickstart --seeds 1..1000 --shard 2/4 --json shard-2.json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeScenarios,
		RunE: func(c *cobra.Command, args []string) error {
			from, err := applyEnv(c.Flags(), s.lookupEnv)
			if err != nil {
				return err
			}
			o.fromEnv = from
			if o.security, err = readSecurityEnv(s.lookupEnv); err != nil {
				return err
			}
			o.messagesSet = c.Flags().Changed("messages")
			o.timeoutSet = c.Flags().Changed("timeout")
			return runSweep(c.Context(), s, o, args[0], c.Flags())
		},
	}
	f := c.Flags()
	f.StringVar(&o.seeds, "seeds", "1..100", "seeds to run: a range FROM..TO, single seeds, or both separated by commas (1..200, 7, 1..5,9)")
	f.IntVar(&o.repeat, "repeat", 1, "runs per seed: counts that differ between them and are not in the variant's varies: are reported")
	f.IntVar(&o.parallel, "parallel", 1, "runs at a time")
	f.StringVar(&o.shard, "shard", "", "run only the I-th of N disjoint slices of the seeds, I/N (e.g. 2/3 on the second of three CI machines); \"dqbench merge\" adds up their -o json")
	f.StringVar(&o.out, "out", "", "directory to save the failing runs in, each as DIR/<scenario>-seed-S (for \"dqbench check\")")
	f.StringArrayVar(&o.expect, "expect", nil, "an expectation over the sweep's runs, VARIANT: COUNT EXPECTATION (e.g. \"none: duplicates > 0 in at least 95% of runs\", \"none: lost == 0 in every run\"); repeat the flag for more; in place of the scenario's sweep_expect on that count")
	f.BoolVar(&o.keepAll, "keep-all", false, "with --out: save every run, not only the failing ones")
	f.BoolVar(&o.force, "force", false, "with --out: overwrite saved runs of the same names")
	addSweepOutputFlags(f, &o.outputOptions)
	addScenarioFlags(f, &o.runOptions)
	_ = c.RegisterFlagCompletionFunc("variant", completeVariants)
	return c
}

// addSweepOutputFlags registers sweep's and merge's -o, --html, --json,
// --junit and --markdown: the same summary on stdout and in each file.
func addSweepOutputFlags(f *pflag.FlagSet, o *outputOptions) {
	f.StringVarP(&o.output, "output", "o", "table", "output format: "+strings.Join(seedsweep.FormatNames(), ", "))
	f.StringVar(&o.html, "html", "", "also write the sweep's self-contained HTML page (per variant and count a histogram of the runs, the failing runs marked and linked to their reproducers) to `FILE`")
	f.StringVar(&o.json, "json", "", "also write the sweep's JSON report (what \"dqbench merge\" reads) to `FILE`")
	f.StringVar(&o.junit, "junit", "", "also write the sweep's JUnit XML report to `FILE`")
	f.StringVar(&o.markdown, "markdown", "", "also write the sweep's Markdown report to `FILE` (e.g. \"$GITHUB_STEP_SUMMARY\")")
}

// checkSweepOutput rejects an unknown -o or a report file whose
// directory does not exist, before any run.
func checkSweepOutput(o outputOptions) error {
	if !slices.Contains(seedsweep.FormatNames(), o.output) {
		return withCode(ExitUsage, fmt.Errorf("--output %q is not allowed (allowed: %s)", o.output, strings.Join(seedsweep.FormatNames(), ", ")))
	}
	for _, f := range o.files() {
		if fi, err := os.Stat(filepath.Dir(f.path)); err != nil || !fi.IsDir() {
			return withCode(ExitUsage, fmt.Errorf("--%s %s: directory %s does not exist", f.format, f.path, filepath.Dir(f.path)))
		}
	}
	return nil
}

// writeSweep writes the summary to stdout in format -o and to each report
// file in its format (passwords in URLs masked, as run's).
func writeSweep(s Streams, o outputOptions, sum seedsweep.Summary) error {
	if err := seedsweep.Write(s.Out, o.output, sum, seedsweep.Options{Width: s.Width}); err != nil {
		return withCode(ExitIncomplete, err)
	}
	for _, f := range o.files() {
		var b strings.Builder
		if err := seedsweep.Write(&b, f.format, sum, seedsweep.Options{Width: s.Width}); err != nil {
			return withCode(ExitIncomplete, fmt.Errorf("--%s: %w", f.format, err))
		}
		if err := f.write([]byte(b.String())); err != nil {
			return withCode(ExitIncomplete, err)
		}
		fmt.Fprintf(s.Err, "wrote the %s report to %s\n", formatTitle(f.format), f.path)
	}
	return nil
}

func runSweep(ctx context.Context, s Streams, o sweepOptions, arg string, flags *pflag.FlagSet) error {
	if err := checkSweepOutput(o.outputOptions); err != nil {
		return err
	}
	seeds, err := seedsweep.ParseSeeds(o.seeds)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	if o.repeat < 1 || o.parallel < 1 {
		return withCode(ExitUsage, fmt.Errorf("--repeat %d --parallel %d: each must be at least 1", o.repeat, o.parallel))
	}
	var shard seedsweep.Shard
	if o.shard != "" {
		if shard, err = seedsweep.ParseShard(o.shard); err != nil {
			return withCode(ExitUsage, err)
		}
	}
	if o.keepAll && o.out == "" {
		return withCode(ExitUsage, errors.New("--keep-all saves runs under --out: give --out DIR too"))
	}
	scs, err := o.prepare(ctx, s, []string{arg})
	if err != nil {
		return err
	}
	for _, e := range o.expect {
		if err := scs[0].AddSweepExpect(e); err != nil {
			return withCode(ExitUsage, fmt.Errorf("--expect %v", err))
		}
	}
	name := scs[0].Name
	if err := seedsweep.CheckOut(o.out, name, o.force); err != nil {
		return withCode(ExitUsage, err)
	}

	if s.Undertaker != nil {
		defer s.Undertaker()()
	}
	sweepBeforeRun(ctx, s.Err)

	o.seedSet = false // each run's seed is the sweep's
	progress := &seedsweep.Progress{}
	cfg := seedsweep.Config{
		Seeds: seeds, SeedSpec: o.seeds, Shard: shard, Repeat: o.repeat, Parallel: o.parallel,
		Scenario: func(seed int64) (*scenario.Scenario, error) {
			sc, err := o.resolve(ctx, arg)
			for _, e := range o.expect {
				if err == nil {
					err = sc.AddSweepExpect(e)
				}
			}
			return sc, err
		},
		Run:       seedsweep.RunFunc(o.run),
		Reproduce: reproducer(arg, o.runOptions, flags),
		Out:       o.out, KeepAll: o.keepAll,
		Progress: progress,
		Warn:     s.Err,
	}
	done := make(chan struct{})
	shown := make(chan struct{})
	go func() {
		seedsweep.Show(s.Err, s.Terminal, s.ErrWidth, name, progress, done)
		close(shown)
	}()
	sum, runErr := seedsweep.Run(ctx, cfg)
	close(done)
	<-shown
	if sum.SchemaVersion == 0 { // nothing ran
		return withCode(exitCodeFor(runErr), runErr)
	}
	if err := writeSweep(s, o.outputOptions, sum); err != nil {
		return err
	}
	if runErr != nil {
		return withCode(exitCodeFor(runErr), runErr)
	}
	return sweepVerdict(sum)
}

// sweepVerdict is the exit code of a sweep's summary, as run's over all
// its runs; the report said why.
func sweepVerdict(sum seedsweep.Summary) error {
	switch sum.Verdict {
	case check.VerdictPass:
		return nil
	case check.VerdictFail:
		return withCode(ExitFail, errSilent)
	}
	return withCode(ExitIncomplete, errSilent)
}

// reproducer returns the command line that runs one seed of the sweep
// again: dqbench run ARG --seed S and the flags given that change the
// scenario (those set from the environment come back from it).
func reproducer(arg string, o runOptions, flags *pflag.FlagSet) func(seed int64) string {
	var extra []string
	for _, name := range scenarioFlags {
		f := flags.Lookup(name)
		if f == nil || !f.Changed || o.fromEnv[name] != "" {
			continue
		}
		value := f.Value.String()
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			value = strings.Join(sv.GetSlice(), ",")
		}
		extra = append(extra, "--"+name, shellQuote(value))
	}
	tail := strings.Join(extra, " ")
	return func(seed int64) string {
		return strings.TrimSpace(fmt.Sprintf("dqbench run %s --seed %d %s", shellQuote(arg), seed, tail))
	}
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./:@,=+%-]+$`)

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func newMergeCmd(s Streams) *cobra.Command {
	var o outputOptions
	c := &cobra.Command{
		Use:   "merge FILE|DIR...",
		Short: "Add up the JSON of a sweep's shards into the whole sweep's report",
		Long: `Merge reads the -o json of each shard of one sweep ("dqbench sweep ...
--shard I/N -o json"; a directory stands for the .json files in it) and
writes the report the sweep would have written on one machine, in any -o
format, with its exit code (timing aside: the duration is the slowest
shard's). A shard not given makes the report INCOMPLETE (exit 3) and is named.

Exit codes: as sweep's.`,
		Example: `  dqbench merge shard-1.json shard-2.json shard-3.json
  dqbench merge shards/ -o junit > dqbench-sweep-junit.xml
  dqbench merge shards/ --html sweep.html
  dqbench merge shards/ -o markdown >> "$GITHUB_STEP_SUMMARY"`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := checkSweepOutput(o); err != nil {
				return err
			}
			files, err := summaryFiles(args)
			if err != nil {
				return withCode(ExitUsage, err)
			}
			var shards []seedsweep.Summary
			for _, f := range files {
				sum, err := readSummary(f)
				if err != nil {
					return withCode(ExitUsage, err)
				}
				shards = append(shards, sum)
			}
			sum, err := seedsweep.Merge(shards)
			if err != nil {
				return withCode(ExitUsage, fmt.Errorf("%w (files, in order: %s)", err, strings.Join(files, ", ")))
			}
			if err := writeSweep(s, o, sum); err != nil {
				return err
			}
			return sweepVerdict(sum)
		},
	}
	addSweepOutputFlags(c.Flags(), &o)
	c.ValidArgsFunction = func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return []cobra.Completion{"json"}, cobra.ShellCompDirectiveFilterFileExt
	}
	return c
}

// summaryFiles are the files args name: each file, and the .json files in
// each directory.
func summaryFiles(args []string) ([]string, error) {
	var files []string
	for _, arg := range args {
		fi, err := os.Stat(arg)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", arg, errors.Unwrap(err))
		}
		if !fi.IsDir() {
			files = append(files, arg)
			continue
		}
		in, err := filepath.Glob(filepath.Join(arg, "*.json"))
		if err != nil {
			return nil, err
		}
		if len(in) == 0 {
			return nil, fmt.Errorf("%s holds no .json file; give the -o json of each shard", arg)
		}
		files = append(files, in...)
	}
	return files, nil
}

// maxSummary bounds a summary file read: a shard's summary holds
// aggregates and failing runs, far below it.
const maxSummary = 256 << 20

// readSummary reads one shard's -o json.
func readSummary(path string) (seedsweep.Summary, error) {
	var sum seedsweep.Summary
	f, err := os.Open(path)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	if err := json.NewDecoder(io.LimitReader(f, maxSummary)).Decode(&sum); err != nil {
		return sum, fmt.Errorf("%s: not the -o json of a sweep: %v", path, err)
	}
	if sum.SchemaVersion == 0 || sum.Scenario == "" {
		return sum, fmt.Errorf("%s: not the -o json of a sweep (no schema_version or scenario; a run's -o json is another document)", path)
	}
	return sum, nil
}
