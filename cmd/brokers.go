package cmd

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/brokers/all"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/internal/ansi"
)

// managedKinds are the names "dqbench brokers" takes: every broker kind
// with a managed mode in the catalog, and its standing broker's own name
// when that differs (mqtt, mosquitto).
func managedKinds() []string {
	var out []string
	for _, k := range all.ManagedKinds() {
		out = append(out, string(k))
		if s, ok := all.Standing[k]; ok && s.Name != string(k) {
			out = append(out, s.Name)
		}
	}
	return out
}

// brokersLong is the help of "dqbench brokers": one paragraph per kind
// with a managed mode, from its standing broker's Doc.
func brokersLong() string {
	var b strings.Builder
	b.WriteString("Brokers starts a local broker from the installed server and leaves it running,\nfor every broker kind with a managed mode:\n")
	for _, k := range all.ManagedKinds() {
		st := all.Standing[k]
		name := string(k)
		if st.Name != name {
			name += " (or " + st.Name + ")"
		}
		fmt.Fprintf(&b, "\n  %s\n", name)
		for _, l := range ansi.Wrap("      "+st.Doc, 80, "      ") {
			fmt.Fprintf(&b, "%s\n", l)
		}
	}
	b.WriteString("\n\"dqbench brokers down KIND\" stops it and removes its files; without KIND, each\ncommand says which kinds it takes.")
	return b.String()
}

func newBrokersCmd(s Streams) *cobra.Command {
	c := &cobra.Command{
		Use:   "brokers",
		Short: "Start, stop or show a local broker that dqbench leaves running (Kafka, RabbitMQ, Mosquitto, NATS); fetch Kafka's jars",
		Long:  brokersLong(),
		Example: `  dqbench brokers fetch kafka
  dqbench brokers up kafka
  dqbench brokers up rabbitmq
  dqbench brokers status rabbitmq
  dqbench brokers down rabbitmq
  dqbench brokers up mosquitto
  dqbench brokers up nats`,
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
	up := brokersSub(s, "up", "Start the broker of KIND (or show the running one) and print its URLs", brokersUp)
	up.SuggestFor = []string{"start", "run"}
	down := brokersSub(s, "down", "Stop the broker of KIND that brokers up started and remove its files", brokersDown)
	down.SuggestFor = []string{"stop", "kill", "halt"}
	status := brokersSub(s, "status", "Show whether the broker of KIND runs, with its nodes and URLs", brokersStatus)
	status.SuggestFor = []string{"show", "ps", "list"}
	c.AddCommand(up, down, status, newBrokersFetchCmd(s))
	return c
}

// fetchKinds are the names "dqbench brokers fetch" takes: the kinds whose
// server dqbench copies into a cache rather than finding it installed.
func fetchKinds() []string {
	var out []string
	for _, k := range all.ManagedKinds() {
		if all.Standing[k].Fetch != nil {
			out = append(out, string(k))
		}
	}
	return out
}

func newBrokersFetchCmd(s Streams) *cobra.Command {
	kinds := fetchKinds()
	return &cobra.Command{
		Use:   "fetch KIND",
		Short: "Copy the server of KIND into dqbench's cache (Apache Kafka's jars from Maven Central, with mvn)",
		Long: `Fetch copies the server a managed broker runs into a cache directory, once:
for kafka, Apache Kafka's broker jar and its runtime dependencies from Maven
Central, with Maven (mvn on PATH, Java 17 or later), into
$DQBENCH_KAFKA_CACHE or ~/.cache/dqbench/kafka-VERSION/libs. A cache that has
them already is left as it is. Instead, KAFKA_HOME may name an unpacked Apache
Kafka 4.x distribution (its libs/ is used the same way).`,
		Example:   "  dqbench brokers fetch kafka\n  DQBENCH_KAFKA_CACHE=/opt/dqbench-kafka dqbench brokers fetch kafka",
		ValidArgs: kinds,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 1 && slices.Contains(kinds, args[0]) {
				return nil
			}
			return withCode(ExitUsage, fmt.Errorf("dqbench brokers fetch takes one broker kind (allowed: %s)", strings.Join(kinds, ", ")))
		},
		RunE: func(c *cobra.Command, args []string) error {
			st := all.Standing[catalog.BrokerKind(args[0])]
			fmt.Fprintf(s.Err, "%s: fetching its server into the cache...\n", args[0])
			dir, took, err := st.Fetch(c.Context(), s.Err)
			if err != nil {
				return withCode(ExitIncomplete, err)
			}
			if took == 0 {
				fmt.Fprintf(s.Out, "%s: already in %s\n", args[0], dir)
				return nil
			}
			fmt.Fprintf(s.Out, "%s: fetched into %s in %s\n", args[0], dir, took.Round(100*time.Millisecond))
			return nil
		},
	}
}

// standingArgs is what every brokers subcommand works on: the name the
// user gave (it starts each line printed) and its standing broker.
type standingArgs struct {
	name     string
	standing brokers.Standing
}

func brokersSub(s Streams, verb, short string, do func(c *cobra.Command, s Streams, a standingArgs) error) *cobra.Command {
	kinds := managedKinds()
	return &cobra.Command{
		Use:       verb + " KIND",
		Short:     short,
		Example:   fmt.Sprintf("  dqbench brokers %s rabbitmq\n  dqbench brokers %s mosquitto", verb, verb),
		ValidArgs: kinds,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				if _, _, ok := all.LookupStanding(args[0]); ok {
					return nil
				}
			}
			return withCode(ExitUsage, fmt.Errorf("dqbench brokers %s takes one broker kind (allowed: %s)", verb, strings.Join(kinds, ", ")))
		},
		RunE: func(c *cobra.Command, args []string) error {
			_, st, _ := all.LookupStanding(args[0])
			return do(c, s, standingArgs{name: args[0], standing: st})
		},
	}
}

func brokersUp(c *cobra.Command, s Streams, a standingArgs) error {
	st, running, err := a.standing.Up(c.Context(), func() { fmt.Fprintln(s.Err, a.standing.Starting) })
	if err != nil {
		return withCode(ExitIncomplete, err)
	}
	if running {
		fmt.Fprintf(s.Out, "%s: the managed %s already runs (up since %s)\n", a.name, a.standing.Noun, st.Started.Format(time.RFC3339))
	} else {
		took := st.StartDur.Round(100 * time.Millisecond)
		if st.StartDur < time.Second {
			took = st.StartDur.Round(time.Millisecond)
		}
		fmt.Fprintf(s.Out, "%s: managed %s up in %s\n", a.name, a.standing.Noun, took)
	}
	printNodes(s.Out, st)
	fmt.Fprintln(s.Out, a.standing.Use(st, "dqbench brokers down "+a.name))
	return nil
}

func brokersDown(_ *cobra.Command, s Streams, a standingArgs) error {
	st, err := a.standing.Down()
	if errors.Is(err, brokers.ErrNoStanding) {
		fmt.Fprintf(s.Out, "%s: no managed %s is running\n", a.name, a.standing.Noun)
		return nil
	}
	if err != nil {
		return withCode(ExitIncomplete, fmt.Errorf("%w: %v", brokers.ErrCleanup, err))
	}
	nodes := ""
	if len(st.Nodes) > 1 {
		nodes = fmt.Sprintf(" (%d nodes)", len(st.Nodes))
	}
	fmt.Fprintf(s.Out, "%s: stopped the managed %s%s and removed %s\n", a.name, a.standing.Noun, nodes, st.Dir)
	return nil
}

func brokersStatus(_ *cobra.Command, s Streams, a standingArgs) error {
	if a.standing.Orphans != nil {
		for _, dir := range a.standing.Orphans() {
			fmt.Fprintf(s.Out, "%s: a managed %s of a run that was killed is left in %s; stop it with \"dqbench clean\"\n", a.name, a.standing.Noun, dir)
		}
	}
	st, err := a.standing.Status()
	if errors.Is(err, brokers.ErrNoStanding) {
		fmt.Fprintf(s.Out, "%s: no managed %s is running; start one with \"dqbench brokers up %s\"\n", a.name, a.standing.Noun, a.name)
		return withCode(ExitIncomplete, errSilent)
	}
	if err != nil {
		return withCode(ExitIncomplete, err)
	}
	up := st.Running()
	if len(st.Nodes) == 1 {
		state := "running"
		if up == 0 {
			state = "not running"
		}
		fmt.Fprintf(s.Out, "%s: managed %s in %s, %s\n", a.name, a.standing.Noun, st.Dir, state)
	} else {
		fmt.Fprintf(s.Out, "%s: managed %s in %s, %d of %d nodes running\n", a.name, a.standing.Noun, st.Dir, up, len(st.Nodes))
	}
	printNodes(s.Out, st)
	if up < len(st.Nodes) {
		return withCode(ExitIncomplete, errSilent)
	}
	return nil
}

func printNodes(w io.Writer, st brokers.StandingState) {
	for _, n := range st.Nodes {
		state := "running"
		if !n.Running {
			state = "stopped"
		}
		fmt.Fprintf(w, "  %-32s %-8s %s\n", n.Name, state, catalog.MaskURL(n.URL))
	}
}
