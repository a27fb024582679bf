// Package cmd is dqbench's command line: thin cobra commands over the
// scenario, runner, check and report packages.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dqbench/dqbench/internal/strictyaml"
	"github.com/dqbench/dqbench/leftover"
	"github.com/dqbench/dqbench/runner"
)

// Exit codes, documented in --help and the README.
const (
	ExitPass       = 0 // every expectation held
	ExitFail       = 1 // an expectation failed
	ExitUsage      = 2 // invalid scenario, flags or usage
	ExitIncomplete = 3 // the run could not be completed
	ExitInternal   = 4 // dqbench itself failed: a bug
)

// issuesURL is where to report a bug.
const issuesURL = "https://github.com/dqbench/dqbench/issues"

const exitCodesHelp = `Exit codes:
  0  every expectation held
  1  an expectation failed
  2  invalid scenario, flags or usage
  3  the run could not be completed (broker unreachable, deadline passed,
     a configured fault never fired, the drain gave up, interrupted)
  4  internal error: a bug in dqbench (please report it)`

// exitError carries an exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func withCode(code int, err error) error { return &exitError{code: code, err: err} }

// errSilent reports an exit code whose reason was already printed.
var errSilent = errors.New("")

// Streams are the command's input and outputs; tests inject buffers.
type Streams struct {
	In       io.Reader
	Out, Err io.Writer
	// Terminal says whether Err is a terminal (progress bars go there).
	Terminal bool
	// PipedProgress is how often a run's progress is written to Err as
	// plain lines when Err is not a terminal (a CI log); 0: never (the
	// binary sets it, in-process tests do not).
	PipedProgress time.Duration
	// Width is the number of columns of the terminal Out writes to; 0
	// when Out is not a terminal (piped, a file, a test buffer).
	Width int
	// ErrWidth is the same for Err: every line written to it (errors,
	// warnings, notices) wraps to fit.
	ErrWidth int
	// NoColor is set when the NO_COLOR environment variable is.
	NoColor bool
	// LookupEnv reads the environment (DQBENCH_STORE...); nil reads the
	// process's (os.LookupEnv).
	LookupEnv func(string) (string, bool)
	// Undertaker, when set, starts the run's undertaker (see
	// leftover.StartUndertaker) and returns its stop; the binary sets it,
	// in-process tests do not.
	Undertaker func() (stop func())

	// term is Err as given, before its lines are wrapped: the progress
	// bars redraw themselves there.
	term io.Writer
}

// color says whether to colour what goes to Out: a terminal, no NO_COLOR.
func (s Streams) color() bool { return s.Width > 0 && !s.NoColor }

// NewRoot builds the dqbench command tree.
func NewRoot(s Streams) *cobra.Command { return newRoot(s, runner.Run) }

// newRoot builds the tree with runF running each scenario, so that tests
// can check the flags-to-options mapping without a broker.
func newRoot(s Streams, runF runFunc) *cobra.Command {
	root := &cobra.Command{
		Use:   "dqbench",
		Short: "Inject delivery faults and count duplicated and lost business effects",
		Long: `dqbench runs YAML scenarios against message brokers, injects faults into
delivery (lost produce responses, consumers killed before they ack) and shows,
side by side, how many business effects were duplicated or lost with and
without each consumer idempotency strategy.

` + exitCodesHelp,
		Example: `  dqbench run quickstart
  dqbench run my-scenario.yaml -o json --seed 7
  dqbench run quickstart --html report.html
  dqbench run quickstart --out runs/ && dqbench explain runs/quickstart
  dqbench validate scenarios/*.yaml
  dqbench list`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       versionLine(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return withCode(ExitUsage, fmt.Errorf("%v%s\nSee '%s --help'.", err, flagHint(c, err), c.CommandPath()))
	})
	root.AddCommand(newRunCmd(s, runF), newSweepCmd(s, runF), newMergeCmd(s), newListCmd(s), newValidateCmd(s), newCheckCmd(s), newExplainCmd(s), newSchemaCmd(s))
	root.AddCommand(newBrokersCmd(s), newVersionCmd(s), newCleanCmd(s), newUndertakerCmd(s))
	return root
}

// Execute runs dqbench with args and returns the process exit code.
func Execute(ctx context.Context, args []string, s Streams) int {
	defer leftover.Close() // what this process noted and removed: its ledger goes
	return execute(ctx, args, s, runner.Run)
}

// execute is Execute with runF running each scenario, so that tests get
// exit codes without a broker. A panic becomes ExitInternal, with a request
// to report it.
func execute(ctx context.Context, args []string, s Streams, runF runFunc) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(s.Err, "dqbench: internal error: %v; please report this at %s with the scenario file\n\n%s", r, issuesURL, debug.Stack())
			code = ExitInternal
		}
	}()
	out := &written{w: s.Out}
	s.term = s.Err
	s.Out, s.Err = masked(out), masked(wrapping(s.Err, s.ErrWidth))
	root := newRoot(s, runF)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitPass
	}
	code = ExitUsage // cobra's own errors: unknown command, bad args
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	if msg := err.Error(); msg != "" {
		fmt.Fprintln(s.Err, "dqbench: "+msg)
		if !out.some {
			writeNoRun(s, root, args, code, err)
		}
	}
	return code
}

// flagHint is ` (did you mean "--seed"?)` for an unknown flag close to one
// of c's, as a mistyped YAML key or built-in name gets; "" otherwise.
func flagHint(c *cobra.Command, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return ""
	}
	name, _, _ = strings.Cut(name, "=")
	var names []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	if near, ok := strictyaml.Suggest(name, names); ok {
		return fmt.Sprintf(" (did you mean \"--%s\"?)", near)
	}
	return ""
}
