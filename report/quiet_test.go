package report_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/report"
)

// TestVerdicts: run --quiet's one line per run names the scenario after
// the word its exit code agrees with.
func TestVerdicts(t *testing.T) {
	all := append(runs(),
		check.Run{Meta: check.Meta{Scenario: "broken", Seed: 1, Messages: 10, Broker: "rabbitmq", Error: "cannot reach RabbitMQ"}},
		check.Run{Meta: check.Meta{Scenario: "cut", Seed: 1, Messages: 10, Broker: "kafka", Incomplete: "the run did not finish by its deadline"}, Passed: true})
	var buf bytes.Buffer
	if err := report.Verdicts(&buf, all, report.Options{}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"INVALID split-crash  seed 42 · 1000 messages per variant · kafka · 3.457s",
		"PASS quickstart  seed 1 · 10 messages per variant · kafka · 250ms",
		"ERROR broken  seed 1 · 10 messages per variant · rabbitmq",
		"INCOMPLETE cut  seed 1 · 10 messages per variant · kafka · 0s",
	}
	got := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("verdicts:\n%s\nwant:\n%s", buf.String(), strings.Join(want, "\n"))
	}
}
