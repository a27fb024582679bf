// Package bench measures dqbench's pipeline against the loop it wraps: a raw
// kgo produce→consume loop on the same embedded broker doing the same
// per-message SQLite transaction. Run with "make bench".
package bench

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dqbench/dqbench/runner"
	"github.com/dqbench/dqbench/scenario"
	"github.com/dqbench/dqbench/store"
	"github.com/dqbench/dqbench/strategy"
)

const messages = 5000

// pipelineScenario is the quickstart's broker and consumer settings with no
// faults and one variant, so both sides do the same work per intent.
const pipelineScenario = `
version: 1
name: bench
messages: %d
deadline: 5m
broker: {kind: kafka, mode: embedded}
producer: {idempotent: true, acks: all, window: 256}
consumer: {instances: 1, ack: after-process, prefetch: 100}
variants:
  - {name: dedup-table, strategy: dedup-table}
`

// BenchmarkPipelineVsRaw runs both side by side and reports their rates in
// intents per second and the ratio pipeline/raw (goal: >= 0.8).
func BenchmarkPipelineVsRaw(b *testing.B) {
	var pipe, raw time.Duration
	for i := 0; i < b.N; i++ {
		pipe += timePipeline(b)
		raw += timeRaw(b)
	}
	pipeRate := float64(messages*b.N) / pipe.Seconds()
	rawRate := float64(messages*b.N) / raw.Seconds()
	b.ReportMetric(pipeRate, "pipeline-intents/s")
	b.ReportMetric(rawRate, "raw-intents/s")
	b.ReportMetric(pipeRate/rawRate, "ratio")
}

func timePipeline(b *testing.B) time.Duration {
	s, err := scenario.Parse("bench.yaml", fmt.Appendf(nil, pipelineScenario, messages))
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	res, err := runner.Run(context.Background(), s, runner.Options{History: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	d := time.Since(start)
	if a := res.Audits["dedup-table"]; len(a.Applied) != messages {
		b.Fatalf("pipeline applied %d intents, want %d", len(a.Applied), messages)
	}
	return d
}

// timeRaw is the hand-written loop: produce everything with kgo, consume it
// in a group, one SQLite transaction (dedup row + effect) per message and a
// synchronous commit after each, as the pipeline does.
func timeRaw(b *testing.B) time.Duration {
	ctx := context.Background()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	db, err := store.OpenSQLite(ctx, filepath.Join(b.TempDir(), "raw.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	st := strategy.DedupTable{}
	if err := st.Setup(ctx, strategy.Env{Store: db}); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	adm, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		b.Fatal(err)
	}
	defer adm.Close()
	if _, err := kadm.NewClient(adm).CreateTopic(ctx, 1, 1, nil, "raw"); err != nil {
		b.Fatal(err)
	}

	prod, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("raw"),
		kgo.MaxBufferedRecords(256), kgo.ProducerLinger(0))
	if err != nil {
		b.Fatal(err)
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumerGroup("raw-group"),
		kgo.ConsumeTopics("raw"), kgo.DisableAutoCommit(), kgo.FetchMaxWait(50*time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		b.Fatal(err)
	}
	defer cons.Close()
	go func() {
		for i := 1; i <= messages; i++ {
			v := fmt.Appendf(nil, `{"intent":%d,"account":%d,"amount":%d}`, i, i%store.Accounts, i%100+1)
			prod.Produce(ctx, &kgo.Record{Key: fmt.Appendf(nil, "%d", i), Value: v}, nil)
		}
		_ = prod.Flush(ctx)
		prod.Close()
	}()
	for done := 0; done < messages; {
		fs := cons.PollRecords(ctx, 100)
		if err := fs.Err0(); err != nil {
			b.Fatal(err)
		}
		for _, r := range fs.Records() {
			if err := process(ctx, st, db, r); err != nil {
				b.Fatal(err)
			}
			if err := cons.CommitRecords(ctx, r); err != nil {
				b.Fatal(err)
			}
			done++
		}
	}
	return time.Since(start)
}

func process(ctx context.Context, st strategy.DedupTable, db *store.SQLite, r *kgo.Record) error {
	var intent, account int
	var amount int64
	if _, err := fmt.Sscanf(string(r.Value), `{"intent":%d,"account":%d,"amount":%d}`, &intent, &account, &amount); err != nil {
		return err
	}
	_, err := st.Process(ctx, strategy.Env{Store: db}, strategy.Message{
		ID:     string(r.Key),
		Effect: store.Effect{Intent: intent, Account: account, Amount: amount},
	}, nil)
	return err
}
