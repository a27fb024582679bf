// Package kafkadiff_test runs every Kafka built-in on the embedded broker
// and on a managed real Apache Kafka and compares their counts (make
// kafka-diff). A package of its own: its runs take minutes, and a test
// binary has one go test -timeout.
package kafkadiff_test

import (
	"testing"

	"github.com/dqbench/dqbench/internal/race"
	"github.com/dqbench/dqbench/runner/internal/runtest"
	"github.com/dqbench/dqbench/scenario"
)

const raceEnabled = race.Enabled

func TestMain(m *testing.M) { runtest.Main(m) }

type judged = runtest.Judged

func passed(t *testing.T, s *scenario.Scenario) *judged { t.Helper(); return runtest.Passed(t, s) }
