package cmd

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/brokers/rabbitmq"
	"github.com/dqbench/dqbench/brokers/rabbitmq/cluster"
	"github.com/dqbench/dqbench/catalog"
)

// managedKinds are the broker kinds "dqbench brokers" can start.
var managedKinds = []string{string(catalog.RabbitMQ)}

func newBrokersCmd(s Streams) *cobra.Command {
	c := &cobra.Command{
		Use:   "brokers",
		Short: "Start, stop or show a local broker cluster that runs with mode: managed reuse",
		Long: `Brokers starts a throwaway local RabbitMQ cluster (3 nodes, from the installed
rabbitmq-server, with its own node names, ports and Erlang cookie; a RabbitMQ
already running on the machine is not touched) and leaves it running, so that
repeated runs with mode: managed skip the cluster's start. Stop it with
"dqbench brokers down rabbitmq".`,
		Example: `  dqbench brokers up rabbitmq
  dqbench brokers status rabbitmq
  dqbench brokers down rabbitmq`,
		Args: cobra.ArbitraryArgs,
		// Without a RunE, cobra prints the help and exits 0 for an unknown
		// verb ("brokers stop"): a typo must fail.
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return c.Help()
			}
			hint := ""
			if s := c.SuggestionsFor(args[0]); len(s) > 0 {
				hint = fmt.Sprintf(" (did you mean %q?)", s[0])
			}
			return withCode(ExitUsage, fmt.Errorf("unknown command %q for %q%s; allowed: up, down, status", args[0], c.CommandPath(), hint))
		},
	}
	c.SuggestionsMinimumDistance = 2
	up := brokersSub(s, "up", "Start the managed cluster (or show the running one) and print its URLs", brokersUp)
	up.SuggestFor = []string{"start", "run"}
	down := brokersSub(s, "down", "Stop the managed cluster and remove its files", brokersDown)
	down.SuggestFor = []string{"stop", "kill", "halt"}
	status := brokersSub(s, "status", "Show whether the managed cluster's nodes run, with their URLs", brokersStatus)
	status.SuggestFor = []string{"show", "ps", "list"}
	c.AddCommand(up, down, status)
	return c
}

func brokersSub(s Streams, verb, short string, do func(c *cobra.Command, s Streams) error) *cobra.Command {
	return &cobra.Command{
		Use:       verb + " KIND",
		Short:     short,
		Example:   "  dqbench brokers " + verb + " rabbitmq",
		ValidArgs: managedKinds,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 || args[0] != string(catalog.RabbitMQ) {
				return withCode(ExitUsage, fmt.Errorf("dqbench brokers %s takes one broker kind (allowed: %s)", verb, strings.Join(managedKinds, ", ")))
			}
			return nil
		},
		RunE: func(c *cobra.Command, _ []string) error { return do(c, s) },
	}
}

func brokersUp(c *cobra.Command, s Streams) error {
	cl, running, err := rabbitmq.Up(c.Context(), func() {
		fmt.Fprintln(s.Err, "starting a 3-node RabbitMQ cluster from rabbitmq-server (about 20-30 s)...")
	})
	if err != nil {
		return withCode(ExitIncomplete, err)
	}
	if running {
		fmt.Fprintf(s.Out, "rabbitmq: the managed cluster already runs (up since %s)\n", cl.Started.Format(time.RFC3339))
	} else {
		fmt.Fprintf(s.Out, "rabbitmq: managed cluster up in %s\n", cl.StartDur.Round(100*time.Millisecond))
	}
	printNodes(s.Out, cl, cl.Status())
	fmt.Fprintf(s.Out, "Runs with mode: managed use it until \"dqbench brokers down rabbitmq\" (user and password: guest).\n")
	return nil
}

func brokersDown(_ *cobra.Command, s Streams) error {
	cl, err := rabbitmq.Down()
	if errors.Is(err, rabbitmq.ErrNoCluster) {
		fmt.Fprintln(s.Out, "rabbitmq: no managed cluster is running")
		return nil
	}
	if err != nil {
		return withCode(ExitIncomplete, fmt.Errorf("%w: %v", brokers.ErrCleanup, err))
	}
	fmt.Fprintf(s.Out, "rabbitmq: stopped the managed cluster (%d nodes) and removed %s\n", len(cl.Nodes), cl.Dir)
	return nil
}

func brokersStatus(_ *cobra.Command, s Streams) error {
	for _, dir := range rabbitmq.OrphanClusters() {
		fmt.Fprintf(s.Out, "rabbitmq: a managed cluster of a run that was killed is left in %s; stop it with \"dqbench clean\"\n", dir)
	}
	cl, err := rabbitmq.Status()
	if errors.Is(err, rabbitmq.ErrNoCluster) {
		fmt.Fprintln(s.Out, "rabbitmq: no managed cluster is running; start one with \"dqbench brokers up rabbitmq\"")
		return withCode(ExitIncomplete, errSilent)
	}
	if err != nil {
		return withCode(ExitIncomplete, err)
	}
	st := cl.Status()
	up := 0
	for _, n := range st {
		if n.Running {
			up++
		}
	}
	fmt.Fprintf(s.Out, "rabbitmq: managed cluster in %s, %d of %d nodes running\n", cl.Dir, up, len(st))
	printNodes(s.Out, cl, st)
	if up < len(st) {
		return withCode(ExitIncomplete, errSilent)
	}
	return nil
}

func printNodes(w io.Writer, _ *cluster.Cluster, st []cluster.NodeStatus) {
	for _, n := range st {
		state := "running"
		if !n.Running {
			state = "stopped"
		}
		fmt.Fprintf(w, "  %-32s %-8s %s\n", n.Name, state, catalog.MaskURL(n.URL()))
	}
}
