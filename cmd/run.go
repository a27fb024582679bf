package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/leftover"
	"github.com/dqbench/dqbench/report"
	"github.com/dqbench/dqbench/runner"
	"github.com/dqbench/dqbench/savedrun"
	"github.com/dqbench/dqbench/scenario"
	"github.com/dqbench/dqbench/store"
)

// runFunc runs one scenario; tests replace runner.Run with a fake.
type runFunc func(ctx context.Context, s *scenario.Scenario, opts runner.Options) (*runner.Result, error)

type runOptions struct {
	seed        int64
	seedSet     bool
	messages    int
	messagesSet bool
	timeoutSet  bool
	outputOptions
	out     string
	force   bool
	timeout time.Duration
	store   string
	redis   string
	// addresses points every scenario at an external broker of its kind.
	addresses []string
	// brokerMode runs every scenario on its kind's broker in this mode
	// (managed: Kafka lessons on a real Apache Kafka).
	brokerMode string
	// toxiproxy routes the broker's client connections through an
	// external toxiproxy.
	toxiproxy string
	// variants, when set, are the only variants of each scenario to run.
	variants []string
	// quiet prints one verdict line per scenario instead of the table.
	quiet bool
	// fromEnv names, per connection flag set from the environment, its
	// variable (for messages).
	fromEnv map[string]string
	// security is the broker's tls and auth from the environment.
	security security

	run runFunc
}

func newRunCmd(s Streams, runF runFunc) *cobra.Command {
	o := runOptions{run: runF}
	c := &cobra.Command{
		Use:   "run SCENARIO...",
		Short: "Run scenarios and report duplicates and losses per variant",
		Long: `Run runs each scenario (a built-in name, see "dqbench list", or a file path;
a built-in's name runs the built-in even beside a file of that name: give
./NAME.yaml for the file):
it publishes the intents, injects the faults on a schedule fixed by the seed,
drains, audits each variant's store and prints one row per variant with the
counts, then a verdict line per expectation. On a terminal narrower than the
table, only the columns that carry the lesson are shown, split into tables one
under the other if need be, and long lines wrap (--wide for every column);
piped output gets the table of an 80-column terminal (--wide for every
column; -o json for scripts) and whole lines. -o junit writes JUnit XML
for CI (one testcase per expectation); -o html or --html FILE a
self-contained HTML page with the counts, a timeline per variant and the
stories of duplicated and lost intents. --quiet prints only each scenario's
verdict line (the word the exit code agrees with, the scenario, seed,
messages, broker); the other -o formats are written whole.

Progress goes to stderr: on a terminal, after 2s, a bar per variant (its
intents published, deliveries acked, acks per second, ETA), erased before
the report; when stderr is not a terminal, plain lines every 10s. --quiet
shows none.

--variant runs only the variants named (repeat it or separate with commas),
in each scenario given.

A run cut short (deadline, Ctrl-C, a drain that gives up) still prints and,
with --out, saves what it recorded, marked incomplete, and exits 3; after
Ctrl-C its expectations are not judged (SKIP) and nothing still on its way
counts as lost. An invalid scenario or flag (exit 2) still writes the -o
json, markdown, junit or html report and the --html page, saying INVALID
and why.

` + envHelp() + `

` + securityHelp() + `

` + exitCodesHelp,
		Example: `  dqbench run quickstart
  dqbench run quickstart --variant none,dedup-table
  dqbench run quickstart --quiet
  dqbench run quickstart --html report.html
  dqbench run quickstart -o junit > dqbench-junit.xml
  dqbench run quickstart --wide
  dqbench run quickstart -o json --seed 7
  dqbench run my-scenario.yaml --messages 10000 --out runs/
  dqbench run strategies-matrix --store postgres://postgres@127.0.0.1:5432/test
  dqbench run quickstart --addresses 127.0.0.1:9092
  dqbench run kafka-transactions --broker-mode managed
  DQBENCH_STORE=postgres://postgres@127.0.0.1:5432/test dqbench run strategies-matrix
  dqbench run quickstart kafka-idempotent-producer -o markdown >> "$GITHUB_STEP_SUMMARY"`,
		Args:              cobra.MinimumNArgs(1),
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
			o.seedSet = c.Flags().Changed("seed")
			o.messagesSet = c.Flags().Changed("messages")
			o.timeoutSet = c.Flags().Changed("timeout")
			return runScenarios(c.Context(), s, o, args)
		},
	}
	f := c.Flags()
	f.Int64Var(&o.seed, "seed", 0, "seed of the fault schedule and amounts (default: the scenario's seed)")
	addOutputFlags(f, &o.outputOptions)
	f.StringVar(&o.out, "out", "", "directory to save each run in, as DIR/<scenario>/ (for \"dqbench check\")")
	f.BoolVar(&o.force, "force", false, "with --out: overwrite a saved run of the same name")
	addScenarioFlags(f, &o)
	f.BoolVarP(&o.quiet, "quiet", "q", false, "print only each scenario's verdict line (PASS, FAIL, INVALID, INCOMPLETE or ERROR, with the scenario's name), no table and no notices")
	_ = c.RegisterFlagCompletionFunc("output", completeFormats)
	_ = c.RegisterFlagCompletionFunc("variant", completeVariants)
	return c
}

// scenarioFlags are the flags that change the scenario a run runs, in the
// order a reproducing command line gives them (see sweep).
var scenarioFlags = []string{"messages", "timeout", "variant", "broker-mode", "addresses", "toxiproxy", "store", "redis"}

// addScenarioFlags registers the flags run and sweep share that change the
// scenario: scenarioFlags.
func addScenarioFlags(f *pflag.FlagSet, o *runOptions) {
	f.IntVar(&o.messages, "messages", 0, "intents to publish per variant (default: the scenario's messages); more than the scenario's scale its deadline by as much unless --timeout is given")
	f.DurationVar(&o.timeout, "timeout", 0, "deadline of each run, e.g. 90s (default: the scenario's deadline)")
	f.StringVar(&o.store, "store", "", "business store of every variant: sqlite or postgres://USER@HOST:PORT/DATABASE (default: the scenario's store; env DQBENCH_STORE)")
	f.StringVar(&o.redis, "redis", "", "Redis for strategies that need one, e.g. redis://127.0.0.1:6379 (default: the scenario's redis; env DQBENCH_REDIS)")
	f.StringVar(&o.toxiproxy, "toxiproxy", "", "API URL of an external toxiproxy (http://HOST:8474) for the broker's client connections, instead of the in-process one (RabbitMQ; env DQBENCH_TOXIPROXY)")
	f.StringSliceVar(&o.addresses, "addresses", nil, "run against an external broker of the scenario's kind at these addresses (comma-separated; host:port for Kafka, amqp:// URLs for RabbitMQ, tcp://HOST:PORT for MQTT, nats://HOST:PORT for NATS), instead of the scenario's broker (env DQBENCH_ADDRESSES)")
	f.StringVar(&o.brokerMode, "broker-mode", "", "run every scenario on a broker of its kind in this mode: embedded, managed (a broker dqbench starts from the installed server; for Kafka a real Apache Kafka from its jars, see \"dqbench brokers fetch kafka\") or external (with --addresses), instead of the scenario's mode (env DQBENCH_BROKER_MODE)")
	f.StringSliceVar(&o.variants, "variant", nil, "run only these variants of each scenario (repeat the flag or separate with commas)")
}

// named says where a connection setting came from, for messages: "--store
// VALUE", or "DQBENCH_STORE=VALUE" when the environment gave it.
func (o runOptions) named(flag, value string) string {
	value = catalog.MaskURL(value)
	if env := o.fromEnv[flag]; env != "" {
		return env + "=" + value
	}
	return "--" + flag + " " + value
}

// flagName is "--addresses", or its variable when the environment gave it.
func (o runOptions) flagName(flag string) string {
	if env := o.fromEnv[flag]; env != "" {
		return env
	}
	return "--" + flag
}

// checkFlags rejects flag values that are wrong whatever the scenario.
func (o runOptions) checkFlags() error {
	if o.messagesSet && o.messages <= 0 {
		return withCode(ExitUsage, fmt.Errorf("--messages %d: must be at least 1 (leave the flag out for the scenario's messages)", o.messages))
	}
	if o.timeoutSet && (o.timeout <= 0 || o.timeout > time.Duration(scenario.MaxDeadline)) {
		return withCode(ExitUsage, fmt.Errorf("--timeout %s: must be above 0s and at most %s, e.g. 90s (leave the flag out for the scenario's deadline)", o.timeout, scenario.MaxDeadline))
	}
	if o.brokerMode != "" && !slices.Contains(catalog.Modes, catalog.Mode(o.brokerMode)) {
		return withCode(ExitUsage, fmt.Errorf("%s %s: not a broker mode (allowed: %s)", o.flagName("broker-mode"), o.brokerMode, strings.Join(catalog.Strings(catalog.Modes), ", ")))
	}
	if o.brokerMode != "" && o.brokerMode != string(catalog.External) && len(o.addresses) > 0 {
		return withCode(ExitUsage, fmt.Errorf("%s %s and %s: addresses are an external broker's; leave one out", o.flagName("broker-mode"), o.brokerMode, o.flagName("addresses")))
	}
	if o.messages > 0 {
		if err := scenario.CheckMessages(o.messages); err != nil {
			return withCode(ExitUsage, fmt.Errorf("--messages: %w", err))
		}
	}
	if o.store != "" {
		if _, err := catalog.ParseStore(o.store); err != nil {
			return withCode(ExitUsage, fmt.Errorf("%s: %w", o.named("store", o.store), err))
		}
	}
	if o.redis != "" {
		if err := catalog.ParseRedis(o.redis); err != nil {
			return withCode(ExitUsage, fmt.Errorf("%s: %w", o.named("redis", o.redis), err))
		}
	}
	return nil
}

// prepare checks the flags, resolves every scenario with the flags applied
// (all must be valid before anything runs), prints their warnings and
// checks --out.
func (o runOptions) prepare(ctx context.Context, s Streams, args []string) ([]*scenario.Scenario, error) {
	if err := o.checkFlags(); err != nil {
		return nil, err
	}
	var scs []*scenario.Scenario
	var problems []string
	for _, arg := range args {
		sc, err := o.resolve(ctx, arg)
		if err != nil && ctx.Err() != nil {
			return nil, withCode(ExitIncomplete, fmt.Errorf("interrupted: %w", ctx.Err()))
		}
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		scs = append(scs, sc)
	}
	if len(problems) > 0 {
		return nil, withCode(ExitUsage, errors.New(strings.Join(problems, "\n")))
	}
	for _, sc := range scs {
		for _, w := range sc.Warnings {
			fmt.Fprintln(s.Err, w)
		}
	}
	if o.out != "" {
		if err := savedrun.CheckOut(o.out); err != nil {
			return nil, withCode(ExitUsage, err)
		}
	}
	return scs, nil
}

// resolve reads the scenario arg names (a built-in or a file) and applies
// the flags to it. A sweep calls it once per run, for a scenario of its own.
func (o runOptions) resolve(ctx context.Context, arg string) (*scenario.Scenario, error) {
	sc, err := scenario.ResolveContext(ctx, arg)
	if err != nil {
		return nil, err
	}
	if len(o.variants) > 0 {
		if err := sc.OnlyVariants(o.variants); err != nil {
			return nil, fmt.Errorf("%s: --variant: %v", sc.File, err)
		}
	}
	if o.seedSet {
		sc.Seed = o.seed
	}
	if o.messages > 0 {
		if err := sc.CheckEvery(o.messages); err != nil {
			return nil, fmt.Errorf("--messages %d: %v", o.messages, err)
		}
		if d := sc.UseMessages(o.messages); d > 0 && o.timeout == 0 {
			sc.Warnings = append(sc.Warnings, fmt.Sprintf("%s: --messages %d: the deadline is scaled with the messages to %s (--timeout sets it)", sc.File, o.messages, d))
		}
	}
	if o.brokerMode != "" && !(o.brokerMode == string(catalog.External) && len(o.addresses) > 0) {
		if err := sc.UseMode(catalog.Mode(o.brokerMode)); err != nil {
			return nil, fmt.Errorf("%s: %s: %v", sc.File, o.flagName("broker-mode"), err)
		}
	}
	if len(o.addresses) > 0 {
		if err := sc.UseExternalBroker(o.addresses); err != nil {
			return nil, fmt.Errorf("%s: %s: %v", sc.File, o.flagName("addresses"), err)
		}
	}
	if o.toxiproxy != "" {
		if err := sc.UseToxiproxy(o.toxiproxy); err != nil {
			return nil, fmt.Errorf("%s: %s: %v", sc.File, o.flagName("toxiproxy"), err)
		}
	}
	if len(o.security.from) > 0 {
		if err := sc.UseSecurity(o.security.tls, o.security.auth); err != nil {
			return nil, fmt.Errorf("%s: %s: %v", sc.File, strings.Join(o.security.from, ", "), err)
		}
	}
	sc.UseSecretEnv(o.security.password, o.security.token)
	if o.timeout > 0 {
		sc.Deadline = scenario.Duration(o.timeout)
	}
	if o.store != "" {
		sc.SetStore(o.store)
	}
	if o.redis != "" {
		sc.Redis = o.redis
	}
	return sc, nil
}

func runScenarios(ctx context.Context, s Streams, o runOptions, args []string) error {
	if err := o.outputOptions.check(); err != nil {
		return err
	}
	scs, err := o.prepare(ctx, s, args)
	if err != nil {
		return err
	}

	// What killed runs left is removed before this one adds its own, and
	// what this one adds is removed even if it is killed.
	if s.Undertaker != nil {
		defer s.Undertaker()()
	}
	if o.quiet {
		sweepBeforeRun(ctx, io.Discard)
	} else {
		sweepBeforeRun(ctx, s.Err)
	}

	var runs []judged
	var failures []error
	used := map[string]int{}
	for _, sc := range scs {
		used[sc.Name]++
		dirName := sc.Name
		if n := used[sc.Name]; n > 1 {
			dirName = fmt.Sprintf("%s-%d", sc.Name, n) // the same scenario twice in one invocation
		}
		j, err := runOne(ctx, s, o, sc, dirName)
		if j != nil {
			runs = append(runs, *j)
			if (j.run.Incomplete != "" || j.run.Error != "") && !errors.Is(err, runner.ErrInternal) {
				err = nil // verdict says why, as it does for a saved run
			}
		}
		if err != nil {
			failures = append(failures, fmt.Errorf("scenario %s: %w", sc.Name, err))
			if ctx.Err() != nil {
				break // interrupted: run nothing more
			}
		}
	}
	if len(runs) > 0 {
		oo := o.outputOptions
		oo.quiet = o.quiet
		if err := writeReports(s, oo, runs); err != nil {
			return withCode(ExitIncomplete, err)
		}
	}
	return verdict(judgedRuns(runs), failures, o.output == "table" && !o.quiet)
}

// runOne runs sc, streaming its history to the run directory (with --out)
// or a temporary file, and judges what was recorded: also a run that was
// cut short. It returns nil when there is nothing to judge.
func runOne(ctx context.Context, s Streams, o runOptions, sc *scenario.Scenario, dirName string) (*judged, error) {
	var hist *os.File
	var dir *savedrun.Dir
	if o.out != "" {
		var err error
		if dir, err = savedrun.Create(o.out, dirName, o.force); err != nil {
			return nil, withCode(ExitUsage, err)
		}
		hist = dir.History
	} else {
		// In the ledger: a killed run's undertaker removes it too.
		f, err := leftover.CreateTemp("dqbench-history-*.jsonl")
		if err != nil {
			return nil, fmt.Errorf("temporary history file: %w", err)
		}
		e := leftover.Entry{Kind: leftover.File, Name: f.Name()}
		defer func() { os.Remove(f.Name()); leftover.Forget(e) }()
		hist = f
	}
	defer hist.Close()

	progress := &runner.Progress{}
	done, shown := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(shown)
		if !o.quiet {
			showProgress(s, sc.Name, progress, done)
		}
	}()
	res, runErr := o.run(ctx, sc, runner.Options{History: hist, Progress: progress})
	close(done)
	<-shown // the bars are gone before the report
	if res == nil {
		if dir != nil {
			if err := dir.Discard(); err != nil {
				fmt.Fprintf(s.Err, "warning: scenario %s: remove the unused run directory %s: %v\n", sc.Name, dir.Path, err)
			}
		}
		return nil, runErr
	}
	for _, c := range res.Cleanup {
		fmt.Fprintf(s.Err, "warning: scenario %s: %v\n", sc.Name, c)
	}

	if _, err := hist.Seek(0, io.SeekStart); err != nil {
		return nil, errors.Join(runErr, err)
	}
	j, err := judgeHistory(hist, sc, res.Meta, res.Audits, o.outputOptions)
	if err != nil {
		return nil, errors.Join(runErr, fmt.Errorf("read back the history: %w", err))
	}
	if dir != nil {
		if err := dir.Finish(sc, res.Meta, res.Audits, &j.run); err != nil {
			return &j, errors.Join(runErr, fmt.Errorf("save run to %s: %w", dir.Path, err))
		}
		if !o.quiet {
			fmt.Fprintf(s.Err, "saved run to %s (re-judge with \"dqbench check %s\")\n", dir.Path, dir.Path)
		}
	}
	return &j, runErr
}

func judgedRuns(all []judged) []check.Run {
	runs := make([]check.Run, len(all))
	for i, j := range all {
		runs[i] = j.run
	}
	return runs
}

// verdict turns judged runs and runs that could not complete into an exit
// code. told says the report on stdout said why each run could not run,
// was cut short or does not count (the table does): stderr does not say it
// again, so a person at a terminal reads it once.
func verdict(runs []check.Run, failures []error, told bool) error {
	valid := true
	for _, r := range runs {
		valid = valid && r.Valid()
		if told {
			continue
		}
		switch {
		case r.Error != "":
			failures = append(failures, fmt.Errorf("scenario %s: could not run: %s", r.Scenario, r.Error))
		case r.Incomplete != "":
			failures = append(failures, fmt.Errorf("scenario %s: %s", r.Scenario, r.Incomplete))
		case !r.Valid():
			failures = append(failures, fmt.Errorf("scenario %s: the experiment is invalid (see INVALID lines)", r.Scenario))
		}
	}
	if len(failures) == 0 && !valid {
		return withCode(ExitIncomplete, errSilent)
	}
	if len(failures) > 0 {
		// A bug outranks a usage error, which outranks an incomplete run.
		code := ExitIncomplete
		for _, f := range failures {
			switch c := exitCodeFor(f); {
			case c == ExitInternal:
				code = c
			case c != ExitIncomplete && code == ExitIncomplete:
				code = c
			}
		}
		msgs := make([]string, len(failures))
		for i, f := range failures {
			msgs[i] = f.Error()
		}
		return withCode(code, errors.New(strings.Join(msgs, "\n")))
	}
	if !report.Passed(runs) {
		return withCode(ExitFail, errSilent)
	}
	return nil
}

// exitCodeFor maps why a run could not be judged or completed to an exit
// code: a bug in dqbench is 4; a bad --out is 2; a broker that cannot be
// reached or stopped answering, a store that cannot serve the run, a
// deadline, an interruption, a store or cleanup failure are 3.
func exitCodeFor(err error) int {
	var ee *exitError
	switch {
	case errors.Is(err, runner.ErrInternal):
		return ExitInternal
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, brokers.ErrUnreachable), errors.Is(err, store.ErrUnusable),
		errors.Is(err, runner.ErrDeadline), errors.Is(err, runner.ErrInterrupted):
		return ExitIncomplete
	}
	return ExitIncomplete
}
