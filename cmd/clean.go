package cmd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/dqbench/dqbench/brokers/kafka"
	"github.com/dqbench/dqbench/brokers/nats"
	"github.com/dqbench/dqbench/brokers/rabbitmq"
	"github.com/dqbench/dqbench/leftover"
	"github.com/dqbench/dqbench/store"
)

// removers are how each kind of resource a killed run left is removed.
var removers = map[leftover.Kind]leftover.Remover{
	leftover.Queue: func(ctx context.Context, e leftover.Entry) error {
		return rabbitmq.DeleteQueue(ctx, e.Where, e.Name)
	},
	leftover.Stream: func(ctx context.Context, e leftover.Entry) error {
		return nats.DeleteStream(ctx, e.Where, e.Name)
	},
	leftover.Schema: func(ctx context.Context, e leftover.Entry) error {
		return store.DropSchema(ctx, e.Where, e.Name)
	},
	leftover.Keys: func(ctx context.Context, e leftover.Entry) error {
		return store.DeleteKeys(ctx, e.Where, e.Name)
	},
}

// sweepBudget bounds a sweep: an orphan on a broker that no longer
// answers stays in its ledger for the next one. The sweep before a run
// gets less: it must not hold every run up.
const (
	sweepBudget    = 10 * time.Second
	runSweepBudget = 3 * time.Second
)

// sweepBeforeRun is the sweep each run does first: it says what it
// removed, and, in one line that fits an 80-column terminal, how many it
// could not (dqbench clean says which and why) — once: not again while
// the same resources stay unremovable, so that an orphan on a server gone
// for good does not fill every run's output ("dqbench clean --forget"
// drops them).
func sweepBeforeRun(ctx context.Context, w io.Writer) {
	ctx, cancel := context.WithTimeout(ctx, runSweepBudget)
	defer cancel()
	n := sweepWithin(ctx, w, io.Discard)
	if n == 0 || w == io.Discard || leftover.Check() != nil {
		return // nothing to tell, nobody to tell it to (--quiet), or told already (a ledger not ours)
	}
	left := fmt.Sprint(n)
	orphans, _ := leftover.Orphans()
	for _, e := range orphans {
		left += "\n" + e.String()
	}
	if !toldNew(left) {
		return
	}
	fmt.Fprintf(w, "%d leftovers of killed runs could not be removed: see dqbench clean\n", n)
}

// toldNew reports whether the unremovable leftovers listed in what differ
// from those a run told of last, and notes them as told.
func toldNew(what string) bool {
	sum := sha256.Sum256([]byte(what))
	mark := filepath.Join(leftover.LedgerDir(), "told")
	if b, err := os.ReadFile(mark); err == nil && string(b) == hex.EncodeToString(sum[:]) {
		return false
	}
	_ = os.WriteFile(mark, []byte(hex.EncodeToString(sum[:])), 0o600)
	return true
}

// sweep removes what killed dqbench processes left (their ledgers'
// directories, queues, streams and schemas, and their throwaway RabbitMQ clusters)
// and says what on w; it returns how many it could not remove.
func sweep(ctx context.Context, w io.Writer, dryRun bool) int {
	if dryRun {
		orphans, err := leftover.Orphans()
		if err != nil {
			fmt.Fprintln(w, err)
		}
		for _, e := range orphans {
			fmt.Fprintf(w, "would remove %s (left by a dqbench that was killed)\n", e)
		}
		for _, m := range managedSweeps {
			for _, dir := range m.orphans() {
				fmt.Fprintf(w, "would stop the managed %s cluster in %s (its run was killed)\n", m.name, dir)
			}
		}
		return 0
	}
	ctx, cancel := context.WithTimeout(ctx, sweepBudget)
	defer cancel()
	return sweepWithin(ctx, w, w)
}

// sweepWithin removes what it can by ctx, saying what on w and what it
// could not on failed; it returns how many it could not remove.
// A ledger directory that is not the user's alone is said on w every
// time: someone else made it.
func sweepWithin(ctx context.Context, w, failedW io.Writer) int {
	removed, failed, err := leftover.Sweep(ctx, removers)
	if err != nil {
		fmt.Fprintln(w, err)
	}
	for _, e := range removed {
		fmt.Fprintf(w, "removed %s (left by a dqbench that was killed)\n", e)
	}
	for _, err := range failed {
		fmt.Fprintf(failedW, "could not remove %v; it stays listed for the next dqbench clean\n", err)
	}
	n := len(failed)
	if err != nil {
		n++
	}
	for _, m := range managedSweeps {
		clusters, err := m.sweep()
		for _, dir := range clusters {
			fmt.Fprintf(w, "stopped the managed %s cluster in %s (its run was killed)\n", m.name, dir)
		}
		if err != nil {
			fmt.Fprintf(w, "could not stop a managed %s cluster a killed run left: %v\n", m.name, err)
			n++
		}
	}
	return n
}

// managedSweeps stop the throwaway clusters of killed runs whose nodes
// may outlive them (their processes die with the run through Pdeathsig;
// this is for what survives it, and for their directories).
var managedSweeps = []struct {
	name    string
	orphans func() []string
	sweep   func() ([]string, error)
}{
	{"RabbitMQ", rabbitmq.OrphanClusters, rabbitmq.SweepClusters},
	{"Kafka", kafka.OrphanClusters, kafka.SweepClusters},
}

func newCleanCmd(s Streams) *cobra.Command {
	var dryRun, forget bool
	c := &cobra.Command{
		Use:   "clean",
		Short: "Remove what killed dqbench runs left behind",
		Long: `Clean removes what dqbench processes that were killed (SIGKILL, a crash, a
power cut: nothing can clean up after those) left behind: temporary store
and broker directories, the queues they declared on a RabbitMQ, the schemas
they created on a PostgreSQL, the keys they wrote on a Redis, and the
managed RabbitMQ and Kafka clusters they started.

Every run records what it creates in a ledger of its own (in
$TMPDIR/dqbench-ledger-UID, readable only by you, or DQBENCH_LEDGER_DIR)
and deletes the ledger when it has removed everything; a ledger whose
process is gone is a killed run's. Each run also does this before it
starts, so clean is for when you want it now. Nothing of a running dqbench
is touched.

Only what is yours alone is trusted: a ledger directory or a managed
cluster's directory (or its state.json) that another user owns, that
others may write to, or that is a symbolic link is refused with a message
and nothing it lists is removed; and only what dqbench made is removed: a
directory holding its .dqbench-made marker, a dqbench-* file, queues and
streams named dqbench-*, schemas dqbench_*, keys dqbench:*.`,
		Example: "  dqbench clean\n  dqbench clean --dry-run\n  dqbench clean --forget   # after it: stop trying what cannot be removed",
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			n := sweep(c.Context(), s.Out, dryRun)
			if n > 0 && forget && !dryRun {
				forgotten, err := leftover.ForgetOrphans()
				for _, e := range forgotten {
					fmt.Fprintf(s.Out, "forgot %s: remove it yourself if it still exists\n", e)
				}
				if err != nil {
					return withCode(ExitIncomplete, err)
				}
				return nil
			}
			if n > 0 {
				return withCode(ExitIncomplete, fmt.Errorf("%d resources could not be removed (see above)", n))
			}
			return nil
		},
	}
	c.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be removed, remove nothing")
	c.Flags().BoolVar(&forget, "forget", false, "after the sweep, forget what could not be removed (on a server gone for good): no run tries it again or mentions it")
	return c
}

// newUndertakerCmd is the hidden command a run starts as its undertaker
// (leftover.StartUndertaker): when the run is killed (SIGKILL: it cannot
// clean up), it removes what the run's ledger lists, at once, instead of
// leaving it for the next run.
func newUndertakerCmd(s Streams) *cobra.Command {
	return &cobra.Command{
		Use:    leftover.UndertakerArg,
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if leftover.Undertake() == "" {
				return nil
			}
			sweep(context.WithoutCancel(cmd.Context()), s.Err, false)
			return nil
		},
	}
}

// StartUndertaker starts this run's undertaker (leftover.StartUndertaker)
// and returns its stop; with DQBENCH_UNDERTAKER=off it starts none, and a
// killed run's leftovers stay for inspection until the next run or
// "dqbench clean". The binary sets it as Streams.Undertaker.
func StartUndertaker() (stop func()) {
	if os.Getenv("DQBENCH_UNDERTAKER") == "off" {
		return func() {}
	}
	self, err := os.Executable()
	if err != nil {
		return func() {}
	}
	stop, err = leftover.StartUndertaker(self, os.Args[0])
	if err != nil {
		return func() {}
	}
	return stop
}
