package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/runner"
	"github.com/dqbench/dqbench/scenario"
)

var (
	intents  = flag.Int("bench.intents", 20000, "intents per measurement")
	pairs    = flag.Int("bench.pairs", 5, "interleaved pipeline/raw pairs")
	storeRef = flag.String("bench.store", "sqlite", "the store both sides use: sqlite, or a postgres:// URL")
)

var seqN atomic.Int64

// seq numbers the measurements, so PostgreSQL schemas never clash.
func seq() int64 { return seqN.Add(1) }

// pipelineScenario is the quickstart's broker, producer and consumer
// settings with no faults and one dedup-table variant, so both sides do the
// same work per intent; %[2]s is the broker (embeddedKafka, or a real
// Kafka's realKafka).
const pipelineScenario = `
version: 1
name: bench
messages: %[1]d
deadline: 60m
drain: 30s
broker: %[2]s
store: %[3]s
producer: {idempotent: true, acks: all, window: 256}
consumer: {instances: 1, ack: after-process, prefetch: 100}
variants:
  - {name: dedup-table, strategy: dedup-table}
`

// embeddedKafka is the broker of the embedded-Kafka rows: a fresh kfake
// per run.
const embeddedKafka = "{kind: kafka, mode: embedded}"

// runPipeline runs dqbench's pipeline on n intents on broker.
func runPipeline(broker string, n int) (time.Duration, error) {
	return runScenario("bench.yaml", fmt.Appendf(nil, pipelineScenario, n, broker, *storeRef), n)
}

// runScenario runs dqbench's pipeline on a one-variant scenario of n
// intents with its history written to a file, judges it, and requires
// every intent applied exactly once. It is the only code here that knows
// the runner's API; it times the run, not the judging.
func runScenario(name string, yaml []byte, n int) (time.Duration, error) {
	s, err := scenario.Parse(name, yaml)
	if err != nil {
		return 0, err
	}
	hist, err := os.CreateTemp("", "dqbench-bench-history-*.jsonl")
	if err != nil {
		return 0, err
	}
	defer os.Remove(hist.Name())
	defer hist.Close()
	start := time.Now()
	res, err := runner.Run(context.Background(), s, runner.Options{History: hist})
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	if _, err := hist.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	run, err := check.Judge(s.Plan(), res.Meta, history.Scan(hist), res.Audits)
	if err != nil {
		return 0, err
	}
	if v := run.Variants[0]; v.Effects != n || v.Lost != 0 || v.Duplicates != 0 {
		return 0, fmt.Errorf("%s: %d effects, %d duplicates, %d lost; want %d, 0, 0", s.Name, v.Effects, v.Duplicates, v.Lost, n)
	}
	return d, nil
}

// pair is one interleaved round: both sides and both references.
type pair struct {
	pipelineFirst bool
	pipe, raw     time.Duration
	tx, commit    time.Duration // references: n transactions, n commits
}

// BenchmarkPipelineVsRaw answers "how close is dqbench's pipeline to a good
// hand-written loop doing the same work?" It runs -bench.pairs interleaved
// pairs, alternating which side goes first, and reports the median per-pair
// ratio pipeline/raw with its min and max (goal: >= 0.8), the two costs that
// bound both (the bare SQLite transaction, the bare synchronous commit),
// and each side's fraction of the sequential bound 1/tx + 1/commit per
// intent.
//
// Fixed costs are inside the timed region on both sides: each starts its own
// fresh kfake cluster and fresh SQLite file and stops them before its clock
// stops. The references time only their loops.
//
// It ignores b.N; run it with -benchtime 1x ("make bench").
func BenchmarkPipelineVsRaw(b *testing.B) {
	if *storeRef != "sqlite" && !reachable(*storeRef) {
		b.Skipf("PostgreSQL at %s is not reachable: no PostgreSQL rows", catalog.MaskURL(*storeRef))
	}
	n := *intents
	t := newTable(fmt.Sprintf("Kafka (embedded kfake) on %s: the pipeline against a raw kgo loop", storeName()),
		fmt.Sprintf("%d interleaved pairs of %d intents: one `dedup-table` variant, no faults, against a hand-written kgo produce-consume loop doing the same per-message transaction and commit; each side starts its own kfake and store inside the timed region. bound = 1/(1/tx + 1/commit) from the bare store-transaction and commit-only loops of the same pair.", *pairs, n))
	var ps []pair
	for i := range *pairs {
		p := pair{pipelineFirst: i%2 == 0}
		sides := []func() error{
			func() (err error) { p.pipe, err = runPipeline(embeddedKafka, n); return err },
			func() error { d, err := timed(func() error { return runRaw(n) }); p.raw = d; return err },
		}
		refs := []func() error{
			func() error {
				dir, cleanup, err := tempDir()
				if err != nil {
					return err
				}
				defer cleanup()
				p.tx, err = timeTxLoop(dir, n)
				return err
			},
			func() (err error) { p.commit, err = timeCommitLoop(n); return err },
		}
		if !p.pipelineFirst {
			slices.Reverse(sides)
			slices.Reverse(refs)
		}
		for _, f := range append(sides, refs...) {
			runtime.GC() // start each measurement without the last one's garbage
			if err := f(); err != nil {
				b.Fatalf("pair %d: %v", i+1, err)
			}
		}
		ps = append(ps, p)
		fmt.Printf("pair %d/%d (%s first): pipeline %v, raw %v, ratio %.3f; tx loop %v, commit loop %v\n",
			i+1, *pairs, p.first(), p.pipe.Round(time.Millisecond), p.raw.Round(time.Millisecond),
			p.raw.Seconds()/p.pipe.Seconds(), p.tx.Round(time.Millisecond), p.commit.Round(time.Millisecond))
	}

	sum := summarize(n, ps)
	per := perPair(n, ps)
	for _, k := range rows {
		t.add(k, per[k])
	}
	t.print(os.Stdout)
	ratio := sum["pipeline/raw ratio"]
	b.Logf("pipeline/raw ratio: median %.3f (min %.3f, max %.3f) over %d pairs of %d intents; pipeline at %.0f%% of the sequential bound",
		ratio.median, ratio.min, ratio.max, len(ps), n, 100*sum["pipeline / bound"].median)
	b.ReportMetric(0, "ns/op") // one run of the whole design, not per-op timing
	b.ReportMetric(ratio.median, "ratio-median")
	b.ReportMetric(ratio.min, "ratio-min")
	b.ReportMetric(ratio.max, "ratio-max")
	b.ReportMetric(sum["pipeline intents/s"].median, "pipeline-intents/s")
	b.ReportMetric(sum["raw intents/s"].median, "raw-intents/s")
	b.ReportMetric(sum["bare store tx/s"].median, "tx/s")
	b.ReportMetric(sum["commit-only records/s"].median, "commits/s")
	b.ReportMetric(sum["pipeline / bound"].median, "pipeline/bound")
}

func (p pair) first() string {
	if p.pipelineFirst {
		return "pipeline"
	}
	return "raw"
}

func timed(f func() error) (time.Duration, error) {
	start := time.Now()
	err := f()
	return time.Since(start), err
}

// spread is a per-pair quantity's median, min and max.
type spread struct{ median, min, max float64 }

func spreadOf(xs []float64) spread {
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return spread{median: m, min: s[0], max: s[len(s)-1]}
}

// summary maps each row of the final table to its spread over the pairs.
type summary map[string]spread

// rows is the final table's order.
var rows = []string{
	"pipeline/raw ratio",
	"pipeline intents/s",
	"raw intents/s",
	"bare store tx/s",
	"commit-only records/s",
	"sequential bound intents/s",
	"pipeline / bound",
	"raw / bound",
	"pipeline / bare store tx",
}

func summarize(n int, ps []pair) summary {
	s := summary{}
	for k, xs := range perPair(n, ps) {
		s[k] = spreadOf(xs)
	}
	return s
}

// storeName is the store of -bench.store as the tables name it.
func storeName() string {
	if *storeRef == "sqlite" {
		return "SQLite"
	}
	return "PostgreSQL"
}

// perPair is each row's value in each pair.
func perPair(n int, ps []pair) map[string][]float64 {
	per := map[string][]float64{}
	for _, p := range ps {
		rate := func(d time.Duration) float64 { return float64(n) / d.Seconds() }
		// One transaction then one commit per intent, nothing overlapped.
		bound := 1 / (1/rate(p.tx) + 1/rate(p.commit))
		for k, v := range map[string]float64{
			"pipeline/raw ratio":         rate(p.pipe) / rate(p.raw),
			"pipeline intents/s":         rate(p.pipe),
			"raw intents/s":              rate(p.raw),
			"bare store tx/s":            rate(p.tx),
			"commit-only records/s":      rate(p.commit),
			"sequential bound intents/s": bound,
			"pipeline / bound":           rate(p.pipe) / bound,
			"raw / bound":                rate(p.raw) / bound,
			// The store's own limit: the same transaction, nothing else.
			"pipeline / bare store tx": rate(p.pipe) / rate(p.tx),
		} {
			per[k] = append(per[k], v)
		}
	}
	return per
}
