package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/dqbench/dqbench/netfault"
)

// rabbitURL is the local RabbitMQ both sides use.
const rabbitURL = "amqp://guest:guest@127.0.0.1:5672/"

// rabbitScenario is rabbitmq-consumer-crash's settings with no faults and
// one dedup-table variant on a classic queue, so both sides do the same
// work per intent.
const rabbitScenario = `
version: 1
name: bench-rabbitmq
messages: %d
deadline: 60m
drain: 30s
broker: {kind: rabbitmq, queue_type: classic}
producer: {window: 256}
consumer: {instances: 1, ack: after-process, prefetch: 100}
variants:
  - {name: dedup-table, strategy: dedup-table}
`

// runRabbitPipeline runs dqbench's pipeline on the local RabbitMQ (every
// client connection through the in-process toxiproxy, as always).
func runRabbitPipeline(n int) (time.Duration, error) {
	return runScenario("bench-rabbitmq.yaml", fmt.Appendf(nil, rabbitScenario, n), n)
}

// runRabbitRaw is the hand-written loop on amqp091-go: a fresh durable
// queue and SQLite file, a producer publishing persistent messages with at
// most 256 unconfirmed (deferred confirms), and a consumer with prefetch
// 100 running the per-message transaction and then acking. Through a
// proxy of an in-process toxiproxy when proxied. Everything it makes is
// removed before it returns.
func runRabbitRaw(n int, proxied bool) (err error) {
	ctx := context.Background()
	dir, cleanup, err := tempDir()
	if err != nil {
		return err
	}
	defer cleanup()
	dial := func() (*amqp.Connection, error) { return amqp.Dial(rabbitURL) }
	if proxied {
		l, err := netfault.Start()
		if err != nil {
			return err
		}
		defer l.Close()
		dial = func() (*amqp.Connection, error) {
			p, err := l.Proxy("bench", "127.0.0.1:5672")
			if err != nil {
				return nil, err
			}
			return amqp.DialConfig(rabbitURL, amqp.Config{Dial: func(network, _ string) (net.Conn, error) {
				return net.Dial(network, p.Addr)
			}})
		}
	}
	admin, err := amqp.Dial(rabbitURL)
	if err != nil {
		return err
	}
	defer admin.Close()
	ach, err := admin.Channel()
	if err != nil {
		return err
	}
	queue := fmt.Sprintf("dqbench-bench-raw-%d", time.Now().UnixNano())
	if _, err := ach.QueueDeclare(queue, true, false, false, false, amqp.Table{amqp.QueueTypeArg: amqp.QueueTypeClassic}); err != nil {
		return err
	}
	defer func() {
		_, derr := ach.QueueDelete(queue, false, false, false)
		err = errors.Join(err, derr)
	}()
	st, err := openTxStore(ctx, filepath.Join(dir, "raw.db"))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, st.Close()) }()

	cconn, err := dial()
	if err != nil {
		return err
	}
	defer cconn.Close()
	cch, err := cconn.Channel()
	if err != nil {
		return err
	}
	if err := cch.Qos(prefetch, 0, false); err != nil {
		return err
	}
	deliveries, err := cch.Consume(queue, "", false, false, false, false, nil)
	if err != nil {
		return err
	}
	produced := make(chan error, 1)
	go func() { produced <- publishAll(dial, queue, n) }()
	applied := 0
	for done := 0; done < n; done++ {
		d, ok := <-deliveries
		if !ok {
			return errors.New("the consumer's channel closed")
		}
		var m intent
		if err := json.Unmarshal(d.Body, &m); err != nil {
			return err
		}
		ok, err := st.apply(ctx, d.MessageId, m)
		if err != nil {
			return fmt.Errorf("intent %d: %w", m.Intent, err)
		}
		if ok {
			applied++
		}
		if err := d.Ack(false); err != nil {
			return fmt.Errorf("ack intent %d: %w", m.Intent, err)
		}
	}
	if err := <-produced; err != nil {
		return err
	}
	if applied != n {
		return fmt.Errorf("raw loop applied %d effects, want %d", applied, n)
	}
	return nil
}

// publishAll publishes intents 1..n with at most window unconfirmed and
// waits for every confirm.
func publishAll(dial func() (*amqp.Connection, error), queue string, n int) error {
	conn, err := dial()
	if err != nil {
		return err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	if err := ch.Confirm(false); err != nil {
		return err
	}
	inflight := make(chan *amqp.DeferredConfirmation, window)
	waited := make(chan error, 1)
	go func() {
		var err error
		for dc := range inflight {
			if !dc.Wait() && err == nil {
				err = errors.New("a publish was not confirmed")
			}
		}
		waited <- err
	}()
	for i := 1; i <= n; i++ {
		v, _ := json.Marshal(newIntent(i))
		dc, err := ch.PublishWithDeferredConfirm("", queue, false, false, amqp.Publishing{
			DeliveryMode: amqp.Persistent, MessageId: strconv.Itoa(i), Body: v,
		})
		if err != nil {
			close(inflight)
			<-waited
			return err
		}
		inflight <- dc
	}
	close(inflight)
	return <-waited
}

// BenchmarkRabbitMQVsRawLoop is BenchmarkPipelineVsRaw's question on
// the local RabbitMQ: the pipeline (whose clients always go through the
// in-process toxiproxy) against the raw amqp091-go loop, straight to the
// broker and through an in-process toxiproxy, in interleaved rounds. It
// reports pipeline/raw (goal >= 0.8) and what the proxy costs the raw loop.
// Skipped when no RabbitMQ answers. It ignores b.N; run it with
// -benchtime 1x ("make bench").
func BenchmarkRabbitMQVsRawLoop(b *testing.B) {
	if c, err := amqp.Dial(rabbitURL); err != nil {
		b.Skipf("no RabbitMQ at %s: %v", "amqp://guest:***@127.0.0.1:5672/", err)
	} else {
		c.Close()
	}
	n := *intents
	t := newTable("RabbitMQ (local, classic queue) on SQLite: the pipeline against a raw amqp091-go loop",
		fmt.Sprintf("%d rounds of %d intents, a different side first each round: one `dedup-table` variant (window 256, prefetch 100, every client connection through the in-process toxiproxy, as always), no faults, against a hand-written amqp091-go loop doing the same confirms window, prefetch, per-message SQLite transaction and ack, straight to the broker and through an in-process toxiproxy.", *pairs, n))
	var ratio, proxyCost, pipeRate, rawRate, proxiedRate []float64
	for i := range *pairs {
		var pipe, raw, proxied time.Duration
		sides := []func() error{
			func() (err error) { pipe, err = runRabbitPipeline(n); return err },
			func() (err error) { raw, err = timed(func() error { return runRabbitRaw(n, false) }); return err },
			func() (err error) { proxied, err = timed(func() error { return runRabbitRaw(n, true) }); return err },
		}
		for k := range sides {
			runtime.GC()
			if err := sides[(k+i)%len(sides)](); err != nil { // a different side first each round
				b.Fatalf("round %d: %v", i+1, err)
			}
		}
		rate := func(d time.Duration) float64 { return float64(n) / d.Seconds() }
		ratio = append(ratio, rate(pipe)/rate(raw))
		proxyCost = append(proxyCost, rate(proxied)/rate(raw))
		pipeRate, rawRate, proxiedRate = append(pipeRate, rate(pipe)), append(rawRate, rate(raw)), append(proxiedRate, rate(proxied))
		fmt.Printf("round %d/%d: pipeline %v, raw %v, raw through toxiproxy %v\n", i+1, *pairs,
			pipe.Round(time.Millisecond), raw.Round(time.Millisecond), proxied.Round(time.Millisecond))
	}
	t.add("pipeline / raw", ratio)
	t.add("raw through toxiproxy / raw", proxyCost)
	t.add("pipeline, intents/s", pipeRate)
	t.add("raw loop, intents/s", rawRate)
	t.add("raw through toxiproxy, intents/s", proxiedRate)
	t.print(os.Stdout)
	r, p := spreadOf(ratio), spreadOf(proxyCost)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(r.median, "ratio-median")
	b.ReportMetric(p.median, "proxied/raw")
}
