package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsPrefetch is how many messages each pull request asks for, on both
// sides.
const natsPrefetch = 100

// natsScenario is the pipeline on the embedded NATS (nats-server as a
// library, file storage) with explicit acks, no faults and one dedup-table
// variant on SQLite.
const natsScenario = `
version: 1
name: bench-nats
messages: %d
deadline: 60m
drain: 30s
broker: {kind: nats, mode: embedded}
store: sqlite
producer: {window: %d}
consumer: {instances: 1, ack: after-process, prefetch: %d}
variants:
  - {name: dedup-table, strategy: dedup-table}
`

// runNATSPipeline runs dqbench's pipeline on n intents over NATS.
func runNATSPipeline(n int) (time.Duration, error) {
	return runScenario("bench-nats.yaml", fmt.Appendf(nil, natsScenario, n, window, natsPrefetch), n)
}

// startNATS starts nats-server in-process with JetStream on dir, as the
// pipeline's embedded broker does.
func startNATS(dir string) (*server.Server, error) {
	srv, err := server.NewServer(&server.Options{
		ServerName: "bench", Host: "127.0.0.1", Port: server.RANDOM_PORT,
		JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true,
	})
	if err != nil {
		return nil, err
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		return nil, errors.New("nats-server did not start")
	}
	return srv, nil
}

// runRawNATS is the hand-written JetStream loop: a fresh nats-server and a
// fresh SQLite file, a file stream and a durable pull consumer with
// explicit acks created first, a publisher (PublishMsgAsync with the
// intent as Nats-Msg-Id) with at most window publishes unacknowledged, and
// a consumer that fetches natsPrefetch at a time, runs the per-message
// transaction (txStore) and acks each message with AckSync (DoubleAck),
// as the pipeline's consumer does. Everything it starts is stopped before
// it returns.
func runRawNATS(n int) (err error) {
	ctx := context.Background()
	dir, cleanup, err := tempDir()
	if err != nil {
		return err
	}
	defer cleanup()
	if err := os.Mkdir(dir+"/js", 0o700); err != nil {
		return err
	}
	srv, err := startNATS(dir + "/js")
	if err != nil {
		return err
	}
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
	st, err := openTxStore(ctx, dir+"/raw.db")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, st.Close()) }()

	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "raw", Subjects: []string{"raw.>"}, Storage: jetstream.FileStorage}); err != nil {
		return err
	}
	if _, err := js.CreateConsumer(ctx, "raw", jetstream.ConsumerConfig{Durable: "raw", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		return err
	}

	pc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		return err
	}
	defer pc.Close()
	pjs, err := jetstream.New(pc)
	if err != nil {
		return err
	}
	produced := make(chan error, 1)
	go func() {
		slots := make(chan struct{}, window)
		errc := make(chan error, 1)
		for i := 1; i <= n; i++ {
			slots <- struct{}{}
			v, _ := json.Marshal(newIntent(i))
			key := strconv.Itoa(i)
			f, err := pjs.PublishMsgAsync(&nats.Msg{Subject: "raw." + key, Data: v}, jetstream.WithMsgID(key))
			if err != nil {
				produced <- fmt.Errorf("publish: %w", err)
				return
			}
			go func() {
				select {
				case <-f.Ok():
				case err := <-f.Err():
					select {
					case errc <- err:
					default:
					}
				}
				<-slots
			}()
		}
		for range window {
			slots <- struct{}{}
		}
		select {
		case err := <-errc:
			produced <- fmt.Errorf("publish: %w", err)
		default:
			produced <- nil
		}
	}()

	cc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		return err
	}
	defer cc.Close()
	cjs, err := jetstream.New(cc)
	if err != nil {
		return err
	}
	ccons, err := cjs.Consumer(ctx, "raw", "raw")
	if err != nil {
		return err
	}
	applied := 0
	deadline := time.Now().Add(time.Minute)
	for done := 0; done < n; {
		if time.Now().After(deadline) {
			return fmt.Errorf("raw nats: %d of %d delivered within a minute", done, n)
		}
		mb, err := ccons.Fetch(natsPrefetch, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			return err
		}
		for m := range mb.Messages() {
			var in intent
			if err := json.Unmarshal(m.Data(), &in); err != nil {
				return fmt.Errorf("message %s: %w", m.Subject(), err)
			}
			ok, err := st.apply(ctx, strings.TrimPrefix(m.Subject(), "raw."), in)
			if err != nil {
				return fmt.Errorf("intent %d: %w", in.Intent, err)
			}
			if ok {
				applied++
			}
			if err := m.DoubleAck(ctx); err != nil {
				return fmt.Errorf("ack: %w", err)
			}
			done++
		}
		if err := mb.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("fetch: %w", err)
		}
	}
	if err := <-produced; err != nil {
		return err
	}
	if applied != n {
		return fmt.Errorf("raw nats loop applied %d effects, want %d", applied, n)
	}
	return nil
}

// BenchmarkNATSVsRaw is BenchmarkPipelineVsRaw on NATS JetStream:
// -bench.pairs interleaved pairs of the pipeline on the embedded
// nats-server (file stream, durable pull consumer, prefetch 100, AckSync,
// window 256, dedup-table on SQLite, no faults) and a raw nats.go loop
// doing the same (same stream and consumer, same window and Nats-Msg-Id,
// the same per-message SQLite transaction, DoubleAck after it). Fixed
// costs are inside the timed region on both sides: each starts its own
// server and SQLite file and stops them before its clock stops. It
// reports the median per-pair ratio pipeline/raw (goal: >= 0.9) in the
// Markdown table make bench prints. It ignores b.N.
func BenchmarkNATSVsRaw(b *testing.B) {
	n := *intents
	t := newTable("NATS JetStream (embedded nats-server "+server.VERSION+") on SQLite: the pipeline against a raw nats.go loop",
		fmt.Sprintf("%d interleaved pairs of %d intents: one `dedup-table` variant, a file stream and a durable pull consumer, window %d, prefetch %d, acks with AckSync, no faults, against a hand-written nats.go jetstream loop (PublishMsgAsync with the same Nats-Msg-Id, Fetch, the same per-message SQLite transaction, DoubleAck); each side starts its own server and SQLite file inside the timed region.", *pairs, n, window, natsPrefetch))
	var ratios, pipeRates, rawRates []float64
	for i := range *pairs {
		var pipe, raw time.Duration
		sides := []func() error{
			func() (err error) { pipe, err = runNATSPipeline(n); return err },
			func() (err error) { raw, err = timed(func() error { return runRawNATS(n) }); return err },
		}
		first := "pipeline"
		if i%2 == 1 {
			slices.Reverse(sides)
			first = "raw"
		}
		for _, f := range sides {
			runtime.GC()
			if err := f(); err != nil {
				b.Fatalf("pair %d: %v", i+1, err)
			}
		}
		ratios = append(ratios, raw.Seconds()/pipe.Seconds())
		pipeRates = append(pipeRates, float64(n)/pipe.Seconds())
		rawRates = append(rawRates, float64(n)/raw.Seconds())
		fmt.Printf("pair %d/%d (%s first): pipeline %v, raw %v, ratio %.3f\n", i+1, *pairs, first,
			pipe.Round(time.Millisecond), raw.Round(time.Millisecond), ratios[len(ratios)-1])
	}
	t.add("pipeline / raw", ratios)
	t.add("pipeline, intents/s", pipeRates)
	t.add("raw loop, intents/s", rawRates)
	t.print(os.Stdout)
	r, p, w := spreadOf(ratios), spreadOf(pipeRates), spreadOf(rawRates)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(r.median, "ratio-median")
	b.ReportMetric(r.min, "ratio-min")
	b.ReportMetric(r.max, "ratio-max")
	b.ReportMetric(p.median, "pipeline-intents/s")
	b.ReportMetric(w.median, "raw-intents/s")
}
