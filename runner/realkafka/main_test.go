// Package realkafka_test runs the Kafka faults on a real Apache Kafka
// that the tests start from dqbench's jar cache (mode: managed). A
// package of its own: a test binary, and a go test -timeout, of its own
// beside the runner's other tests, which it would otherwise double.
package realkafka_test

import (
	"context"
	"testing"

	"github.com/dqbench/dqbench/internal/race"
	"github.com/dqbench/dqbench/runner/internal/runtest"
	"github.com/dqbench/dqbench/scenario"
)

const raceEnabled = race.Enabled

func TestMain(m *testing.M) { runtest.Main(m) }

type judged = runtest.Judged

func passed(t *testing.T, s *scenario.Scenario) *judged { t.Helper(); return runtest.Passed(t, s) }

func runJudged(t *testing.T, ctx context.Context, s *scenario.Scenario) (*judged, error) {
	t.Helper()
	return runtest.Run(t, ctx, s)
}

func parse(t *testing.T, yaml string) *scenario.Scenario { t.Helper(); return runtest.Parse(t, yaml) }
