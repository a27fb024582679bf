package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/runner"
	"github.com/dqbench/dqbench/scenario"
)

// crashEvery is how often the crash-recovery benchmark kills the consumer.
const crashEvery = 50

// crashScenario is pipelineScenario with the consumer killed after the
// effect and before the commit every crashEvery intents (%[3]s: the
// faults, empty for the run without) on broker %[2]s.
const crashScenario = `
version: 1
name: bench-crash
messages: %[1]d
deadline: 60m
drain: 30s
broker: %[2]s
store: sqlite
producer: {idempotent: true, acks: all, window: 256}
consumer: {instances: 1, ack: after-process, prefetch: 100}
%[3]s
variants:
  - {name: dedup-table, strategy: dedup-table}
`

// runCrashes runs crashScenario on broker with or without its crashes and
// returns the run's time, how many crashes it had and, from the history,
// each crash's stall (stalls). Every intent must be applied exactly once
// either way.
func runCrashes(broker string, n int, crashes bool) (time.Duration, int, []time.Duration, error) {
	faults := ""
	if crashes {
		faults = fmt.Sprintf("faults: [{type: consumer-crash, at: after-effect-before-ack, every: %d}]", crashEvery)
	}
	s, err := scenario.Parse("bench-crash.yaml", fmt.Appendf(nil, crashScenario, n, broker, faults))
	if err != nil {
		return 0, 0, nil, err
	}
	hist, err := os.CreateTemp("", "dqbench-bench-history-*.jsonl")
	if err != nil {
		return 0, 0, nil, err
	}
	defer os.Remove(hist.Name())
	defer hist.Close()
	start := time.Now()
	res, err := runner.Run(context.Background(), s, runner.Options{History: hist})
	d := time.Since(start)
	if err != nil {
		return 0, 0, nil, err
	}
	if _, err := hist.Seek(0, io.SeekStart); err != nil {
		return 0, 0, nil, err
	}
	run, err := check.Judge(s.Plan(), res.Meta, history.Scan(hist), res.Audits)
	if err != nil {
		return 0, 0, nil, err
	}
	v := run.Variants[0]
	if v.Effects != n || v.Lost != 0 || v.Duplicates != 0 {
		return 0, 0, nil, fmt.Errorf("%d effects, %d duplicates, %d lost; want %d, 0, 0", v.Effects, v.Duplicates, v.Lost, n)
	}
	if _, err := hist.Seek(0, io.SeekStart); err != nil {
		return 0, 0, nil, err
	}
	st, err := stalls(hist)
	if err != nil {
		return 0, 0, nil, err
	}
	return d, v.FaultsInjected, st, nil
}

// stalls reads, for each consumer crash in a history, how long the
// consumer side stood still: from the fault that killed an instance to the
// first delivery to a later one (the old client leaving the group, the
// replacement starting, joining and fetching from the last commit).
func stalls(r io.Reader) ([]time.Duration, error) {
	var out []time.Duration
	var at time.Duration
	crashed := 0 // the instance killed last, until a later one has a delivery
	for e, err := range history.Scan(r) {
		if err != nil {
			return nil, err
		}
		switch {
		case e.Type == history.Fault && e.Consumer > 0 && crashed == 0:
			crashed, at = e.Consumer, e.T
		case e.Type == history.Deliver && crashed > 0 && e.Consumer > crashed:
			out = append(out, e.T-at)
			crashed = 0
		}
	}
	return out, nil
}

// BenchmarkCrashRecovery answers "what does one consumer crash cost?" on
// embedded Kafka: interleaved pairs of the same run with and without a
// crash every crashEvery intents (after the effect, before the commit:
// dedup-table skips each redelivery), and the difference divided by the
// crashes. A crash costs the replacement's start (a new client joins the
// group and fetches from the last commit) and the redelivered records. It
// ignores b.N; run it with -benchtime 1x ("make bench").
func BenchmarkCrashRecovery(b *testing.B) {
	crashRecovery(b, "Crash recovery on embedded Kafka", embeddedKafka, "")
}

// crashRecovery measures and prints the crash-recovery table of broker;
// where says more of the broker in the table's setup line.
func crashRecovery(b *testing.B, title, broker, where string) {
	n := *intents
	t := newTable(title,
		fmt.Sprintf("%d interleaved pairs of %d intents on SQLite%s, one `dedup-table` variant, with and without a consumer crash every %d intents (after the effect, before the commit); the stall of a crash is the time from the fault to the replacement's first delivery, read from the history (the run's median); the run time per crash is the difference in run time divided by the crashes (noisier: it carries the run-to-run spread).", *pairs, n, where, crashEvery))
	var perCrash, stall, withRate, withoutRate []float64
	for i := range *pairs {
		var with, without time.Duration
		var crashes int
		var st []time.Duration
		sides := []func() error{
			func() (err error) { with, crashes, st, err = runCrashes(broker, n, true); return err },
			func() (err error) { without, _, _, err = runCrashes(broker, n, false); return err },
		}
		if i%2 == 1 {
			sides[0], sides[1] = sides[1], sides[0]
		}
		for _, f := range sides {
			runtime.GC()
			if err := f(); err != nil {
				b.Fatalf("pair %d: %v", i+1, err)
			}
		}
		if crashes == 0 || len(st) == 0 {
			b.Fatalf("pair %d: no crash happened", i+1)
		}
		ms := make([]float64, len(st))
		for j, d := range st {
			ms[j] = d.Seconds() * 1000
		}
		cost := (with - without).Seconds() * 1000 / float64(crashes)
		perCrash = append(perCrash, cost)
		stall = append(stall, spreadOf(ms).median)
		withRate = append(withRate, float64(n)/with.Seconds())
		withoutRate = append(withoutRate, float64(n)/without.Seconds())
		fmt.Printf("crash pair %d/%d: %d crashes, with %v, without %v, %.2f ms per crash, stall median %.2f ms\n", i+1, *pairs, crashes,
			with.Round(time.Millisecond), without.Round(time.Millisecond), cost, spreadOf(ms).median)
	}
	t.add("stall per crash, ms (median in the run)", stall)
	t.add("run time per crash, ms", perCrash)
	t.add("with crashes, intents/s", withRate)
	t.add("without, intents/s", withoutRate)
	t.print(os.Stdout)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(spreadOf(stall).median, "ms/stall")
	b.ReportMetric(spreadOf(perCrash).median, "ms/crash")
}
