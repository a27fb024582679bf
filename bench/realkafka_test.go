package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dqbench/dqbench/brokers/kafka/cluster"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/internal/testenv"
	"github.com/dqbench/dqbench/netfault"
	nfkafka "github.com/dqbench/dqbench/netfault/kafka"
)

// startRealKafka starts the one-node Apache Kafka that a run with mode:
// managed starts (brokers/kafka/cluster: the same jars, JVM flags and
// server.properties) and stops it when tb ends. Without Kafka's jars or
// Java, tb is skipped, saying how to get them (on stdout too: go test
// shows a benchmark's skip only with -v).
func startRealKafka(tb testing.TB) *cluster.Cluster {
	tb.Helper()
	if _, err := cluster.FindInstall(); err != nil {
		fmt.Printf("%s skipped: no real Kafka rows: %v\n", tb.Name(), err)
		testenv.Unavailable(tb, "no real Kafka rows: %v", err)
	}
	// The prefix of a managed run's own cluster: should this process be
	// killed, "dqbench clean" (and the next managed run) stops what is left.
	dir, err := os.MkdirTemp("", "dqbench-kafka-cluster-")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := cluster.Start(ctx, cluster.Options{Dir: dir, Nodes: 1, Owned: true})
	if err != nil {
		tb.Fatalf("start a one-node Apache Kafka: %v", err)
	}
	tb.Cleanup(func() {
		if err := c.Stop(); err != nil {
			tb.Errorf("stop the Apache Kafka in %s: %v", dir, err)
		}
	})
	fmt.Printf("started Apache Kafka %s, one node at %s, in %v (load %s)\n",
		c.Install.Version, strings.Join(c.Addrs(), ","), c.StartDur.Round(time.Millisecond), loadAverage())
	return c
}

// realKafka is the broker of a scenario that runs on c as mode: managed
// would, without starting a cluster of its own: mode: external, every
// client through dqbench's relays (a managed run connects to its cluster
// the same way, brokers/kafka.Connect).
func realKafka(c *cluster.Cluster) string {
	quoted := make([]string, len(c.Nodes))
	for i, a := range c.Addrs() {
		quoted[i] = strconv.Quote(a) // a flow sequence reads host:port as a mapping
	}
	return fmt.Sprintf("{kind: kafka, mode: external, addresses: [%s]}", strings.Join(quoted, ", "))
}

// realRows are the rows of BenchmarkManagedKafkaVsRaw, in order.
var realRows = []string{
	"pipeline/raw ratio",
	"pipeline/raw through the relays ratio",
	"raw through the relays/raw ratio",
	"pipeline intents/s",
	"raw intents/s",
	"raw through the relays intents/s",
	"bare store tx/s",
	"pipeline / bare store tx",
}

// warmUp is the intents of each side's unmeasured run before the first
// round: the broker's JVM compiles its hot paths during its first
// seconds of work, which would otherwise slow whichever side goes first.
const warmUp = 1000

// BenchmarkManagedKafkaVsRaw is BenchmarkPipelineVsRaw on a real Apache
// Kafka: one node, started once (startRealKafka) and shared by every run.
// Each round runs three sides, in an order that rotates from round to
// round: the pipeline (pipelineScenario, every client through dqbench's
// relays, as on any real Kafka); the raw kgo loop of the embedded row,
// connected to the broker directly, as a user's client would; and the
// same raw loop through relays like dqbench's (relayTo), which splits the
// pipeline's cost into the relays' and the rest. Every side creates and
// deletes its topic and group and makes its own store inside the timed
// region. Then the bare store transaction loop of the embedded row, the
// pipeline's bound: the raw loop commits each record synchronously, the
// pipeline batches its commits, so the ratio to the raw loop says more of
// Kafka's commit round trip than of dqbench. It ignores b.N; run it with
// -benchtime 1x ("make bench").
func BenchmarkManagedKafkaVsRaw(b *testing.B) {
	if *storeRef != "sqlite" && !reachable(*storeRef) {
		b.Skipf("PostgreSQL at %s is not reachable: no PostgreSQL rows", catalog.MaskURL(*storeRef))
	}
	c := startRealKafka(b)
	broker := realKafka(c)
	n := *intents
	t := newTable(fmt.Sprintf("Kafka (real, managed 1 node) on %s: the pipeline against a raw kgo loop on the same broker", storeName()),
		fmt.Sprintf("%d interleaved rounds of %d intents on one Apache Kafka %s node (the cluster mode: managed starts, started once, then one unmeasured run of %d intents per side): one `dedup-table` variant, no faults, every client through dqbench's relays, against the hand-written kgo loop of the embedded row (the same transaction, then a synchronous commit of each record) connected to the broker directly, and the same loop through relays like dqbench's (a netfault relay with the Kafka protocol filter, no fault on); the three sides run in an order that rotates from round to round, each creates and deletes its topic and group and makes its store inside the timed region; then the bare store-transaction loop.", *pairs, n, c.Install.Version, warmUp))
	side := func(name string, m int) (time.Duration, error) {
		switch name {
		case "pipeline":
			return runPipeline(broker, m)
		case "raw":
			return timed(func() error { return runRawOn(c.Addrs(), false, m) })
		default:
			return timed(func() error { return runRawOn(c.Addrs(), true, m) })
		}
	}
	sides := []string{"pipeline", "raw", "raw through the relays"}
	for _, s := range sides {
		if _, err := side(s, warmUp); err != nil {
			b.Fatalf("warm-up, %s: %v", s, err)
		}
	}
	per := map[string][]float64{}
	for i := range *pairs {
		d := map[string]time.Duration{}
		var order []string
		for j := range sides {
			s := sides[(i+j)%len(sides)]
			order = append(order, s)
			runtime.GC()
			var err error
			if d[s], err = side(s, n); err != nil {
				b.Fatalf("round %d, %s: %v", i+1, s, err)
			}
		}
		dir, cleanup, err := tempDir()
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		tx, err := timeTxLoop(dir, n)
		cleanup()
		if err != nil {
			b.Fatalf("round %d, bare store tx: %v", i+1, err)
		}
		rate := func(d time.Duration) float64 { return float64(n) / d.Seconds() }
		pipe, raw, relayed := d["pipeline"], d["raw"], d["raw through the relays"]
		for k, v := range map[string]float64{
			"pipeline/raw ratio":                    rate(pipe) / rate(raw),
			"pipeline/raw through the relays ratio": rate(pipe) / rate(relayed),
			"raw through the relays/raw ratio":      rate(relayed) / rate(raw),
			"pipeline intents/s":                    rate(pipe),
			"raw intents/s":                         rate(raw),
			"raw through the relays intents/s":      rate(relayed),
			"bare store tx/s":                       rate(tx),
			"pipeline / bare store tx":              rate(pipe) / rate(tx),
		} {
			per[k] = append(per[k], v)
		}
		fmt.Printf("round %d/%d (%s): pipeline %v, raw %v, raw through the relays %v, bare store tx %v; ratio %.3f, through the relays %.3f, to the bare tx %.3f; load %s\n",
			i+1, *pairs, strings.Join(order, ", "), pipe.Round(time.Millisecond), raw.Round(time.Millisecond),
			relayed.Round(time.Millisecond), tx.Round(time.Millisecond), rate(pipe)/rate(raw), rate(pipe)/rate(relayed),
			rate(pipe)/rate(tx), loadAverage())
	}
	for _, k := range realRows {
		t.add(k, per[k])
	}
	t.print(os.Stdout)
	ratio := spreadOf(per["pipeline/raw ratio"])
	b.Logf("pipeline/raw ratio on a real Kafka: median %.3f (min %.3f, max %.3f) over %d rounds of %d intents; pipeline at %.2f of the bare store tx",
		ratio.median, ratio.min, ratio.max, *pairs, n, spreadOf(per["pipeline / bare store tx"]).median)
	b.ReportMetric(0, "ns/op") // one run of the whole design, not per-op timing
	b.ReportMetric(ratio.median, "ratio-median")
	b.ReportMetric(ratio.min, "ratio-min")
	b.ReportMetric(ratio.max, "ratio-max")
	b.ReportMetric(spreadOf(per["pipeline/raw through the relays ratio"]).median, "relayed-ratio-median")
	b.ReportMetric(spreadOf(per["pipeline / bare store tx"]).median, "pipeline/tx")
}

// BenchmarkManagedKafkaCrash is BenchmarkCrashRecovery on a real Apache
// Kafka (one node, started once and warmed up): what one consumer crash
// costs there, where the replacement joins a group on Kafka's group
// coordinator through dqbench's relays. What bounds it is in
// docs/bench-real-kafka.md. It ignores b.N; run it with -benchtime 1x
// ("make bench").
func BenchmarkManagedKafkaCrash(b *testing.B) {
	c := startRealKafka(b)
	// The group coordinator's paths warm up over the first hundreds of
	// rejoins: one unmeasured run with crashes, as long as the measured.
	if _, _, _, err := runCrashes(realKafka(c), *intents, true); err != nil {
		b.Fatalf("warm-up: %v", err)
	}
	crashRecovery(b, "Crash recovery on a real Kafka (managed 1 node)", realKafka(c),
		fmt.Sprintf(" on one Apache Kafka %s node (the cluster mode: managed starts, started once, then one unmeasured run with crashes)", c.Install.Version))
}

// runRawOn is runRaw on the real Kafka at upstream (one node), which
// outlives it: a fresh topic and group, created and deleted inside the
// timed region as the pipeline's are. relayed: every client goes through
// relays like dqbench's (relayTo), one for the producer and the admin, one
// for the consumer, as dqbench gives each consumer instance its own.
func runRawOn(upstream []string, relayed bool, n int) (err error) {
	ctx := context.Background()
	seeds, consSeeds := upstream, upstream
	if relayed {
		for _, s := range []*[]string{&seeds, &consSeeds} {
			r, err := relayTo(upstream[0])
			if err != nil {
				return err
			}
			defer r.Close()
			*s = []string{r.Addr}
		}
	}
	adm, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return err
	}
	defer adm.Close()
	ad := kadm.NewClient(adm)
	name := fmt.Sprintf("dqbench-bench-raw-%d-%d", os.Getpid(), seq())
	resp, err := ad.CreateTopic(ctx, 1, -1, nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", name, err)
	}
	group := name + "-group"
	defer func() { // after the consumer left the group (rawLoop)
		err = errors.Join(err, deleteTopic(ctx, ad, name, group))
	}()
	return rawLoop(ctx,
		append(producerOpts(seeds), kgo.DefaultProduceTopic(name)),
		append(consumerOpts(consSeeds), kgo.ConsumerGroup(group), kgo.ConsumeTopics(name)), n)
}

// deleteTopic deletes a raw loop's group and topic, as the pipeline
// deletes its own at the end of a run on a real Kafka.
func deleteTopic(ctx context.Context, ad *kadm.Client, topic, group string) error {
	var errs []error
	if resp, err := ad.DeleteGroups(ctx, group); err != nil {
		errs = append(errs, err)
	} else if err := resp.Error(); err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		errs = append(errs, err)
	}
	if resp, err := ad.DeleteTopics(ctx, topic); err != nil {
		errs = append(errs, err)
	} else if err := resp.Error(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("delete topic %s and group %s: %w", topic, group, err)
	}
	return nil
}

// relayTo starts what dqbench puts in front of a real Kafka's broker
// (brokers/kafka/proxy.go, with no fault on): a netfault relay whose
// connections all go through the Kafka protocol filter (netfault/kafka),
// which rewrites the broker address in the broker's answers to the
// relay's, so a client never dials the broker itself. For a one-node
// cluster: every broker named becomes this relay.
func relayTo(upstream string) (*netfault.Relay, error) {
	type hostPort struct {
		host string
		port int32
	}
	var relay atomic.Pointer[hostPort] // set once the relay listens
	fs := &nfkafka.Filters{Rewrite: func(_ int32, host string, port int32) (string, int32) {
		if a := relay.Load(); a != nil {
			return a.host, a.port
		}
		return host, port
	}}
	r, err := netfault.NewRelay(upstream, fs.Conn)
	if err != nil {
		return nil, err
	}
	host, p, err := net.SplitHostPort(r.Addr)
	if err == nil {
		var port int
		if port, err = strconv.Atoi(p); err == nil {
			relay.Store(&hostPort{host, int32(port)})
			return r, nil
		}
	}
	return nil, errors.Join(err, r.Close())
}
