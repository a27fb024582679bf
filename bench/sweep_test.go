package bench

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/runner"
	"github.com/dqbench/dqbench/scenario"
	"github.com/dqbench/dqbench/sweep"
)

var (
	sweepScenario = flag.String("bench.sweep-scenario", "quickstart", "BenchmarkSweepParallel: the built-in (or file) swept")
	sweepSeeds    = flag.Int("bench.sweep-seeds", 12, "BenchmarkSweepParallel: seeds per sweep (1..N)")
	sweepMessages = flag.Int("bench.sweep-messages", 0, "BenchmarkSweepParallel: intents per run (0: the scenario's)")
)

// BenchmarkSweepParallel answers "what does --parallel 2 buy?" (#39: at
// least 1.7× the runs per second of --parallel 1 on 2 cores). It sweeps
// -bench.sweep-scenario over seeds 1..-bench.sweep-seeds at --parallel 1
// and at --parallel 2, -bench.pairs times, alternating which goes first,
// on embedded brokers (a fresh one per run, inside the timed region), as
// "dqbench sweep" does, and reports each side's runs per second and the
// median per-pair ratio parallel 2 / parallel 1 with its min and max, and
// how many CPUs each side kept busy (the process's CPU time over the
// wall time): a run that already keeps every CPU busy leaves --parallel
// nothing to gain.
// Both sweeps of a pair must pass, with the same runs judged.
//
// It ignores b.N; run it with -benchtime 1x ("make bench").
func BenchmarkSweepParallel(b *testing.B) {
	seeds := make([]int64, *sweepSeeds)
	for i := range seeds {
		seeds[i] = int64(i + 1)
	}
	first, err := sweepScenarioFor(1)
	if err != nil {
		b.Fatal(err)
	}
	t := newTable(fmt.Sprintf("dqbench sweep %s: --parallel 2 against --parallel 1", first.Name),
		fmt.Sprintf("%d interleaved pairs of sweeps of seeds 1..%d, %d intents per run, %d variants, each run on its own embedded broker (%s) started inside the timed region; the ratio is runs/s at --parallel 2 over runs/s at --parallel 1 in the same pair.",
			*pairs, len(seeds), first.Messages, len(first.Variants), first.Broker.Kind))
	var ratio, one, two, busy1, busy2 []float64
	for i := range *pairs {
		order := []int{1, 2}
		if i%2 == 1 {
			slices.Reverse(order)
		}
		rate, busy := map[int]float64{}, map[int]float64{}
		for _, parallel := range order {
			runtime.GC() // start each sweep without the last one's garbage
			cpu0 := cpuTime()
			start := time.Now()
			sum, err := sweep.Run(b.Context(), sweep.Config{
				Seeds: seeds, SeedSpec: fmt.Sprintf("1..%d", len(seeds)), Repeat: 1, Parallel: parallel,
				Scenario:  sweepScenarioFor,
				Run:       runner.Run,
				Reproduce: func(seed int64) string { return fmt.Sprintf("dqbench run %s --seed %d", *sweepScenario, seed) },
				Warn:      os.Stderr,
			})
			d := time.Since(start)
			busy[parallel] = (cpuTime() - cpu0).Seconds() / d.Seconds()
			if err != nil {
				b.Fatalf("pair %d, --parallel %d: %v", i+1, parallel, err)
			}
			if sum.Verdict != check.VerdictPass || sum.Finished != len(seeds) {
				b.Fatalf("pair %d, --parallel %d: %s, %d of %d runs finished: a sweep that does not pass measures nothing\n%v",
					i+1, parallel, sum.Verdict, sum.Finished, len(seeds), sum.Failures)
			}
			rate[parallel] = float64(sum.Finished) / d.Seconds()
		}
		one, two = append(one, rate[1]), append(two, rate[2])
		busy1, busy2 = append(busy1, busy[1]), append(busy2, busy[2])
		ratio = append(ratio, rate[2]/rate[1])
		fmt.Printf("pair %d/%d (--parallel %d first): --parallel 1 %.2f runs/s (%.2f CPUs busy), --parallel 2 %.2f runs/s (%.2f CPUs busy), ratio %.2f; load average %s\n",
			i+1, *pairs, order[0], rate[1], busy[1], rate[2], busy[2], rate[2]/rate[1], loadAverage())
	}
	t.add("runs/s ratio --parallel 2 / --parallel 1", ratio)
	t.add("--parallel 1 runs/s", one)
	t.add("--parallel 2 runs/s", two)
	t.add("--parallel 1 CPUs busy (process CPU time / wall time)", busy1)
	t.add("--parallel 2 CPUs busy", busy2)
	t.print(os.Stdout)
	r := spreadOf(ratio)
	b.Logf("--parallel 2 / --parallel 1: median %.2f (min %.2f, max %.2f) over %d pairs of %d runs each", r.median, r.min, r.max, len(ratio), len(seeds))
	b.ReportMetric(0, "ns/op") // one measurement of the whole design, not per-op timing
	b.ReportMetric(r.median, "ratio-median")
	b.ReportMetric(r.min, "ratio-min")
	b.ReportMetric(r.max, "ratio-max")
	b.ReportMetric(spreadOf(one).median, "p1-runs/s")
	b.ReportMetric(spreadOf(two).median, "p2-runs/s")
}

// cpuTime is the user and system CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sweepScenarioFor is the swept scenario with -bench.sweep-messages, for
// one run (sweep.Config.Scenario: a scenario of the run's own).
func sweepScenarioFor(int64) (*scenario.Scenario, error) {
	s, err := scenario.Resolve(*sweepScenario)
	if err != nil {
		return nil, err
	}
	if *sweepMessages > 0 {
		if err := s.CheckEvery(*sweepMessages); err != nil {
			return nil, err
		}
		s.Messages = *sweepMessages
	}
	return s, nil
}
