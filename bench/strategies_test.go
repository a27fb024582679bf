package bench

import (
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"runtime"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/dqbench/dqbench/catalog"
)

var (
	postgresURL = flag.String("bench.postgres", "postgres://postgres@127.0.0.1:5432/test", "PostgreSQL for BenchmarkStrategies (skipped when unreachable)")
	redisURL    = flag.String("bench.redis", catalog.DefaultRedis, "Redis for redis-setnx in BenchmarkStrategies (skipped when unreachable)")
)

// strategyScenario is the pipeline scenario with one variant of strategy
// on store, no faults.
const strategyScenario = `
version: 1
name: bench-strategies
messages: %d
deadline: 60m
drain: 30s
broker: {kind: kafka, mode: embedded}
store: %s
redis: %s
producer: {idempotent: true, acks: all, window: 256}
consumer: {instances: 1, ack: after-process, prefetch: 100}
variants:
  - {name: v, strategy: %s}
`

// BenchmarkStrategies measures each strategy's throughput on each store
// (SQLite, and PostgreSQL when reachable), through the whole pipeline with
// no faults: intents per second, the median of -bench.pairs rounds. Each
// round runs every cell once, in an order that rotates between rounds, so
// a noisy neighbour spreads over all cells. Ratios within one table are
// what to compare; absolute rates depend on the machine's load.
//
// It ignores b.N; run it with -benchtime 1x ("make bench-strategies").
func BenchmarkStrategies(b *testing.B) {
	stores := []string{"sqlite"}
	if reachable(*postgresURL) {
		stores = append(stores, *postgresURL)
	} else {
		b.Logf("PostgreSQL at %s is not reachable: SQLite only", catalog.MaskURL(*postgresURL))
	}
	type cell struct {
		strategy catalog.StrategyName
		store    string
	}
	var cells []cell
	for _, st := range catalog.Strategies {
		if st.NeedsRedis && !reachable(*redisURL) {
			b.Logf("Redis at %s is not reachable: %s left out", *redisURL, st.Name)
			continue
		}
		for _, ref := range stores {
			cells = append(cells, cell{st.Name, ref})
		}
	}
	rates := map[cell][]float64{}
	for round := range *pairs {
		for i := range cells {
			c := cells[(i+round*7)%len(cells)]
			runtime.GC()
			d, err := runStrategy(*intents, c.strategy, c.store)
			if err != nil {
				b.Fatalf("%s on %s: %v", c.strategy, catalog.MaskURL(c.store), err)
			}
			rates[c] = append(rates[c], float64(*intents)/d.Seconds())
		}
	}
	fmt.Printf("\nintents/s through the whole pipeline (embedded Kafka, no faults), median of %d rounds of %d intents; ratio: to dedup-table on the same store\n", *pairs, *intents)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "strategy\t")
	for _, ref := range stores {
		fmt.Fprintf(tw, "%s\tratio\t", storeLabel(ref))
	}
	fmt.Fprintln(tw)
	for _, st := range catalog.Strategies {
		if _, ok := rates[cell{st.Name, stores[0]}]; !ok {
			continue
		}
		fmt.Fprintf(tw, "%s\t", st.Name)
		for _, ref := range stores {
			r := spreadOf(rates[cell{st.Name, ref}]).median
			base := spreadOf(rates[cell{catalog.DedupTable, ref}]).median
			fmt.Fprintf(tw, "%.0f\t%.2f\t", r, r/base)
			b.ReportMetric(r, string(st.Name)+"@"+storeLabel(ref)+"-intents/s")
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	b.ReportMetric(0, "ns/op")
}

func storeLabel(ref string) string {
	if ref == "sqlite" {
		return "sqlite"
	}
	return "postgres"
}

// runStrategy runs the pipeline on n intents with one variant of strategy
// on store, judges it, and requires every intent applied exactly once.
func runStrategy(n int, strategy catalog.StrategyName, store string) (time.Duration, error) {
	return runScenario("bench-strategies.yaml", fmt.Appendf(nil, strategyScenario, n, store, *redisURL, strategy), n)
}

// reachable says whether the server in a URL accepts a TCP connection.
func reachable(ref string) bool {
	u, err := url.Parse(ref)
	if err != nil || u.Host == "" {
		return false
	}
	c, err := net.DialTimeout("tcp", u.Host, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
