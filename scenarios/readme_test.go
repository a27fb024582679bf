package scenarios_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/scenario"
	"github.com/dqbench/dqbench/scenarios"
)

var update = flag.Bool("update", false, "rewrite README.md from the built-ins and the lessons table below")

// lesson is one section of README.md: built-ins that teach about the same
// thing, in reading order.
type lesson struct {
	title string
	runs  []timed
}

// timed is a built-in and the wall time of one run of it, in seconds, as
// measuredHow says.
type timed struct {
	name    string
	seconds float64
}

// lessons groups every built-in, once, by broker and lesson. Adding a
// built-in: add it here with its measured time, then regenerate README.md.
var lessons = []lesson{
	{"Start here", []timed{
		{"quickstart", 1.6},
		{"delivery-guarantees", 3.8},
	}},
	{"Idempotency strategies (on the embedded Kafka)", []timed{
		{"strategies-matrix", 27.4},
		{"strategy-split-tx-loss", 12.9},
		{"strategy-check-then-act-race", 4.6},
		{"strategy-dedup-retention", 9.2},
		{"strategy-setnx-ttl", 13.8},
		{"strategy-version-order", 11.7},
		{"strategy-id-source", 7.6},
		{"producer-outbox", 1.8},
	}},
	{"Kafka: producer retries, offsets, transactions, rebalances", []timed{
		{"kafka-commit-timing", 1.6},
		{"kafka-auto-commit", 2.0},
		{"kafka-idempotent-producer", 1.8},
		{"kafka-client-retries", 1.1},
		{"kafka-producer-restart", 1.4},
		{"kafka-transactions", 1.2},
		{"kafka-eos-to-database", 2.7},
		{"kafka-rebalance", 4.7},
		{"kafka-consumer-evicted", 1.5},
		{"kafka-leader-move", 2.1},
		{"kafka-leader-failover", 29.5},
		{"kafka-partition-order", 21.4},
	}},
	{"RabbitMQ: acks, confirms, the network, queue limits, a cluster", []timed{
		{"rabbitmq-consumer-crash", 2.8},
		{"rabbitmq-weak-keys", 0.9},
		{"rabbitmq-quorum-acked-redelivery", 5.5},
		{"rabbitmq-autoack-crash", 0.4},
		{"rabbitmq-ack-lost", 1.6},
		{"rabbitmq-confirm-lost", 6.5},
		{"rabbitmq-connection-reset", 1.7},
		{"rabbitmq-producer-connection", 6.0},
		{"rabbitmq-producer-latency", 3.3},
		{"rabbitmq-partition", 3.3},
		{"rabbitmq-poison-dlq", 2.4},
		{"rabbitmq-retry-queue", 4.1},
		{"consumer-transient-failure", 6.4},
		{"rabbitmq-max-length", 0.3},
		{"rabbitmq-quorum-failover", 142.7},
		{"rabbitmq-durability", 34.4},
		{"rabbitmq-consumer-timeout", 23.6},
	}},
	{"MQTT: QoS levels, sessions, the broker's limits and restarts", []timed{
		{"mqtt-qos-levels", 0.6},
		{"mqtt-effective-qos", 0.5},
		{"mqtt-client-qos2", 3.4},
		{"mqtt-persistent-session", 0.5},
		{"mqtt-subscriber-offline", 0.7},
		{"mqtt-shared-subscription", 1.0},
		{"mqtt-retained-resubscribe", 1.0},
		{"mqtt-session-expiry", 4.7},
		{"mqtt-broker-queue-limit", 5.2},
		{"mqtt-broker-restart", 4.5},
	}},
	{"NATS JetStream: ack policies, ack_wait, max_deliver, the stream's dedup window, a cluster", []timed{
		{"nats-ack-none", 4.6},
		{"nats-msg-id-dedup", 6.6},
		{"nats-retry-backoff", 9.3},
		{"nats-ack-lost", 3.2},
		{"nats-ack-wait", 2.7},
		{"nats-max-deliver", 0.5},
		{"nats-stream-failover", 10.0},
		{"strategy-weak-keys", 4.4},
		{"strategy-effect-kinds", 7.0},
		{"strategy-conditional-aba", 11.3},
	}},
}

// measuredHow says where the seconds in lessons come from (measure says
// how to measure them again).
const measuredHow = "the wall time of one run of the built binary, each built-in once, one after\n" +
	"  another, with RabbitMQ, Redis and Mosquitto on 127.0.0.1, on a 2-core machine shared with other\n" +
	"  work, on 2026-12-01: at load average 1.6 to 2.8 for the Kafka, MQTT and RabbitMQ rows, but 15 to\n" +
	"  22 for the strategy rows and `rabbitmq-quorum-failover` (which takes 33 to 45 s at low load), so\n" +
	"  those are slower than on a quiet machine. A run stops at its deadline at most (`deadline:` in the\n" +
	"  file, `--timeout`)."

// measure is the command that measures every built-in's wall time.
const measure = `go build -o dqbench . && for n in $(./dqbench list | cut -d' ' -f1); do
  /usr/bin/time -f "$n %e s" ./dqbench run "$n" >/dev/null; done`

const regenerate = "go test ./scenarios -run TestREADME -update"

// TestREADME holds README.md to the built-ins: their names, broker and
// description. A changed description fails it until README.md is
// regenerated (see regenerate).
func TestREADME(t *testing.T) {
	var want bytes.Buffer
	fmt.Fprintf(&want, "<!-- Generated from the files' descriptions by `%s` (scenarios/readme_test.go); do not edit. -->\n\n", regenerate)
	want.WriteString(`# Built-in scenarios

Each file here is a scenario dqbench embeds: ` + "`dqbench run NAME`" + ` runs it from any directory,
` + "`dqbench list`" + ` lists them, and each is a starting point for your own (copy it, edit it, then
` + "`dqbench run my.yaml`" + `). The format is [docs/scenario.md](../docs/scenario.md).

- **broker**: the kind and mode. embedded runs in-process; external is a running broker
  (RabbitMQ at amqp://guest:guest@127.0.0.1:5672/ unless ` + "`--addresses`" + `); managed is one dqbench
  starts from the installed server (a 3-node RabbitMQ or NATS cluster, a single RabbitMQ node with ` + "`nodes: 1`" + `, a Mosquitto per variant);
  "+ Redis": a variant keeps its markers in Redis (127.0.0.1:6379 unless ` + "`--redis`" + `).
- **what it teaches**: the file's ` + "`description`" + `, as ` + "`dqbench list`" + ` prints it.
- **runs**: ` + measuredHow + `

This page is generated: after changing a description or adding a built-in (with its measured time
in ` + "`lessons`" + ` in [readme_test.go](readme_test.go)), run ` + "`" + regenerate + "`" + `.
To measure the times again, from the repository's top level:

` + "```sh\n" + measure + "\n```\n")
	seen := map[string]bool{}
	for _, l := range lessons {
		fmt.Fprintf(&want, "\n## %s\n\n| name | broker | what it teaches | runs |\n|---|---|---|---|\n", l.title)
		for _, r := range l.runs {
			if seen[r.name] {
				t.Errorf("lessons lists %s twice", r.name)
			}
			seen[r.name] = true
			if r.seconds <= 0 {
				t.Errorf("lessons has no measured time for %s: run it once as measuredHow says and write the seconds", r.name)
			}
			s, err := scenario.Resolve(r.name)
			if err != nil {
				t.Errorf("lessons lists %s: %v", r.name, err)
				continue
			}
			fmt.Fprintf(&want, "| [`%s`](%s.yaml) | %s | %s | %s |\n", r.name, r.name, broker(s), cell(s.Description), runs(r.seconds))
		}
	}
	want.WriteString(`
## Counts that depend on timing

The same seed gives the same fault schedule, so most counts repeat exactly from run to run. These
do not: each variant's ` + "`varies`" + ` names them, with why, and ` + "`run`" + ` prints a ` + "`timing`" + ` line for them.
` + "`make repeat`" + ` runs every built-in 5 times with its seed and fails on any other count that moves.

| built-in | variant | counts | why |
|---|---|---|---|
`)
	for _, l := range lessons {
		for _, r := range l.runs {
			s, err := scenario.Resolve(r.name)
			if err != nil {
				continue
			}
			for _, v := range s.Plan().Variants {
				for _, g := range (check.Variant{Varies: v.Varies}).VariesGroups() {
					counts := strings.ReplaceAll(g.Counts, " (0 here)", "")
					fmt.Fprintf(&want, "| `%s` | %s | %s | %s |\n", r.name, v.Name, counts, cell(g.Why))
				}
			}
		}
	}
	for _, name := range scenarios.Names() {
		if !seen[name] {
			t.Errorf("built-in %s is not in lessons (scenarios/readme_test.go): add it to its lesson with the wall time of one run", name)
		}
	}
	if *update {
		if err := os.WriteFile("README.md", want.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatalf("%v; generate it: %s", err, regenerate)
	}
	if !bytes.Equal(got, want.Bytes()) {
		gotLines, wantLines := strings.Split(string(got), "\n"), strings.Split(want.String(), "\n")
		for i := range max(len(gotLines), len(wantLines)) {
			g, w := line(gotLines, i), line(wantLines, i)
			if g != w {
				t.Fatalf("scenarios/README.md is stale at line %d:\n  has:  %s\n  want: %s\nregenerate it: %s", i+1, g, w, regenerate)
			}
		}
	}
}

// broker is the broker cell: kind, mode, and Redis when a variant needs it.
func broker(s *scenario.Scenario) string {
	mode := s.Broker.Mode
	if mode == "" {
		mode = catalog.ModeOf(s.Broker.Kind)
	}
	out := fmt.Sprintf("%s, %s", s.Broker.Kind, mode)
	if slices.ContainsFunc(s.Variants, func(v scenario.Variant) bool {
		st, ok := catalog.LookupStrategy(v.Strategy)
		return ok && st.NeedsRedis
	}) {
		out += " + Redis"
	}
	return out
}

func runs(seconds float64) string {
	if seconds < 1 {
		return "<1 s"
	}
	return fmt.Sprintf("%.0f s", seconds)
}

// cell escapes text for a Markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}

func line(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(end of file)"
}
