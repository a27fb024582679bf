package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dqbench/dqbench/catalog"
)

// stageBatch is the records per transaction on both sides.
const stageBatch = 10

// stageScenario is pipelineScenario with a transactional stage between the
// producer and a read_committed consumer.
const stageScenario = `
version: 1
name: bench-stage
messages: %d
deadline: 60m
drain: 30s
broker: {kind: kafka, mode: embedded}
store: %s
producer: {idempotent: true, acks: all, window: 256}
consumer: {instances: 1, ack: after-process, prefetch: 100, isolation: read_committed}
stage: {transactional: true, batch: %d}
variants:
  - {name: dedup-table, strategy: dedup-table}
`

func runStagePipeline(n int) (time.Duration, error) {
	return runScenario("bench-stage.yaml", fmt.Appendf(nil, stageScenario, n, *storeRef, stageBatch), n)
}

// runRawStage is the hand-written transactional pipeline on a fresh kfake
// cluster and store: a producer publishes intents 1..n; a
// kgo.GroupTransactSession polls batches of stageBatch records, writes them
// to the output topic and commits each batch in a transaction; a
// read_committed group consumer applies each output record in a store
// transaction and commits it.
func runRawStage(n int) (err error) {
	ctx := context.Background()
	dir, cleanup, err := tempDir()
	if err != nil {
		return err
	}
	defer cleanup()
	c, seeds, err := startBroker(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	const out = topic + "-out"
	adm, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return err
	}
	resp, err := kadm.NewClient(adm).CreateTopic(ctx, 1, 1, nil, out)
	adm.Close()
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic: %w", err)
	}
	st, err := openRawStore(ctx, dir, "raw.db")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, st.Close()) }()

	sess, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(seeds...),
		kgo.ConsumerGroup(group+"-stage"),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(50*time.Millisecond),
		kgo.DefaultProduceTopic(out),
		kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.TransactionalID("raw-stage"),
	)
	if err != nil {
		return err
	}
	defer sess.Close()
	cons, err := kgo.NewClient(append(consumerOpts(seeds),
		kgo.ConsumeTopics(out), kgo.FetchIsolationLevel(kgo.ReadCommitted()))...)
	if err != nil {
		return err
	}
	defer cons.Close()

	stageCtx, stopStage := context.WithCancel(ctx)
	defer stopStage()
	produced := make(chan error, 1)
	go func() { produced <- produceAll(ctx, producerOpts(seeds), n) }()
	staged := make(chan error, 1)
	go func() { staged <- stageLoop(stageCtx, sess) }()

	applied, err := consumeApply(ctx, cons, st, n)
	if err != nil {
		return err
	}
	stopStage()
	if err := <-staged; err != nil {
		return err
	}
	if err := <-produced; err != nil {
		return err
	}
	if applied != n {
		return fmt.Errorf("raw stage applied %d effects, want %d", applied, n)
	}
	return nil
}

// stageLoop is the raw side's consume-transform-produce loop, until ctx
// ends.
func stageLoop(ctx context.Context, sess *kgo.GroupTransactSession) error {
	for {
		fs := sess.PollRecords(ctx, stageBatch)
		if ctx.Err() != nil {
			return nil
		}
		if err := fs.Err0(); err != nil {
			return fmt.Errorf("stage poll: %w", err)
		}
		if err := sess.Begin(); err != nil {
			return err
		}
		for _, r := range fs.Records() {
			sess.Produce(ctx, &kgo.Record{Key: r.Key, Value: r.Value}, nil)
		}
		if _, err := sess.End(ctx, kgo.TryCommit); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("stage commit: %w", err)
		}
	}
}

// BenchmarkTransactionalStage sets the pipeline with a transactional stage
// (kafka-transactions' transactional-read-committed without faults, and
// dedup-table at the end) beside the same work written by hand with kgo,
// in interleaved pairs, and reports the median ratio pipeline/raw.
// It ignores b.N; run it with -benchtime 1x ("make bench").
func BenchmarkTransactionalStage(b *testing.B) {
	if *storeRef != "sqlite" && !reachable(*storeRef) {
		b.Skipf("PostgreSQL at %s is not reachable", catalog.MaskURL(*storeRef))
	}
	n := *intents
	t := newTable(fmt.Sprintf("Kafka transactional stage on %s: the pipeline against a raw kgo GroupTransactSession loop", storeName()),
		fmt.Sprintf("%d interleaved pairs of %d intents: a transactional consume-transform-produce stage (batch %d) between the producer and a read_committed `dedup-table` consumer, no faults, against the same written by hand with kgo; each side starts its own kfake and store inside the timed region.", *pairs, n, stageBatch))
	var ratios, pipe, raw []float64
	for i := range *pairs {
		var p, r time.Duration
		sides := []func() error{
			func() (err error) { p, err = runStagePipeline(n); return err },
			func() (err error) { r, err = timed(func() error { return runRawStage(n) }); return err },
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
		rate := func(d time.Duration) float64 { return float64(n) / d.Seconds() }
		ratios, pipe, raw = append(ratios, rate(p)/rate(r)), append(pipe, rate(p)), append(raw, rate(r))
		fmt.Printf("transactional pair %d/%d: pipeline %v, raw %v, ratio %.3f\n", i+1, *pairs, p.Round(time.Millisecond), r.Round(time.Millisecond), rate(p)/rate(r))
	}
	t.add("pipeline / raw", ratios)
	t.add("pipeline, intents/s", pipe)
	t.add("raw loop, intents/s", raw)
	t.print(os.Stdout)
	ratio, pr, rr := spreadOf(ratios), spreadOf(pipe), spreadOf(raw)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ratio.median, "ratio-median")
	b.ReportMetric(pr.median, "pipeline-intents/s")
	b.ReportMetric(rr.median, "raw-intents/s")
}
