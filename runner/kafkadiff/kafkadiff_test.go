package kafkadiff_test

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dqbench/dqbench/brokers/kafka"
	"github.com/dqbench/dqbench/brokers/kafka/cluster"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/internal/testenv"
	"github.com/dqbench/dqbench/scenario"
	"github.com/dqbench/dqbench/scenarios"
)

// kafkaDiffTable prints the comparison as a Markdown table (make
// kafka-diff).
var kafkaDiffTable = flag.Bool("kafkadiff.table", false, "print TestKafkaEmbeddedVersusManaged's counts as a Markdown table")

// TestKafkaEmbeddedVersusManaged runs every Kafka built-in on the
// embedded broker (kfake) and on a managed real Apache Kafka (one node,
// from its jars) with the same seed, and compares every count of every
// variant: a count that differs must be one the scenario says varies run
// to run (varies:), else the two brokers teach different lessons and the
// test fails. Built-ins with a fault that cannot act on a real Kafka yet
// are listed, with the reason. make kafka-diff prints the table.
func TestKafkaEmbeddedVersusManaged(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("full-size built-in runs on a real Kafka: not with -short or -race")
	}
	if _, err := cluster.FindInstall(); err != nil {
		testenv.Unavailable(t, "%v", err)
	}
	// One cluster for every managed run (they reuse the standing one),
	// in the tests' own state directory (TestMain).
	c, _, err := kafka.Up(context.Background(), func() {})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := kafka.Down(); err != nil {
			t.Error(err)
		}
	}()
	t.Logf("managed Kafka %s (1 node) up in %s", c.Install.Version, c.StartDur)
	var table []string
	for _, name := range scenarios.Names() {
		embedded, err := scenario.Resolve(name)
		if err != nil {
			t.Fatal(err)
		}
		if embedded.Broker.Kind != catalog.Kafka || embedded.Broker.Mode != catalog.Embedded {
			continue // kafka-leader-failover runs on a managed cluster only
		}
		managed, _ := scenario.Resolve(name)
		if err := managed.UseMode(catalog.Managed); err != nil {
			table = append(table, fmt.Sprintf("| %s | | not on a real Kafka yet: %s |", name, err))
			continue
		}
		// The deadline guards a hung run; it is not what is compared. A
		// real Kafka of three JVMs on a loaded machine can take minutes
		// where the built-in's deadline was written for seconds.
		for _, s := range []*scenario.Scenario{embedded, managed} {
			s.Deadline = max(s.Deadline, scenario.Duration(10*time.Minute))
		}
		t.Run(name, func(t *testing.T) {
			e, m := passed(t, embedded), passed(t, managed)
			table = append(table, compareCounts(t, name, e, m)...)
		})
	}
	if *kafkaDiffTable {
		fmt.Printf("| built-in | variant | counts that differ (embedded → real Kafka) | run time embedded → real |\n|---|---|---|---|\n%s\n", strings.Join(table, "\n"))
	}
}

// compareCounts fails t for a count of a variant that differs between
// the embedded run e and the managed run m without the variant saying it
// varies, and returns the table's rows.
func compareCounts(t *testing.T, name string, e, m *judged) []string {
	t.Helper()
	managed := map[string]check.Variant{}
	for _, v := range m.Run.Variants {
		managed[v.Name] = v
	}
	var rows []string
	for _, ev := range e.Run.Variants {
		mv := managed[ev.Name]
		varies := map[string]bool{}
		for _, vr := range ev.Varies {
			varies[vr.Count] = true
		}
		var diffs []string
		for _, c := range check.Table {
			a, b := c.Value(ev.Counts), c.Value(mv.Counts)
			if a == b {
				continue
			}
			mark := ""
			if !varies[c.Name] {
				mark = " (not in varies)"
				t.Errorf("%s/%s: %s %d on the embedded broker, %d on a real Kafka, and the scenario does not say it varies", name, ev.Name, c.Name, a, b)
			}
			diffs = append(diffs, fmt.Sprintf("%s %d → %d%s", c.Name, a, b, mark))
		}
		same := "same"
		if len(diffs) > 0 {
			same = strings.Join(diffs, ", ")
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s → %s |", name, ev.Name, same,
			e.Meta.Duration.Round(1e7), m.Meta.Duration.Round(1e7)))
	}
	return rows
}
