package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/brokers/brokertest"
	"github.com/dqbench/dqbench/catalog"
)

// TestRebalanceHandsOverWhatWasPolled: a consumer that loses partitions in
// a rebalance while it holds records of them it polled and has not handed
// over (up to prefetch) drops them: the partitions' new owner gets them
// from the last commit, and the old owner no more. So two consumers that
// share the group, the second joining while the first holds a full poll,
// together deliver every record once: a rebalance that no crash caused
// duplicates nothing.
func TestRebalanceHandsOverWhatWasPolled(t *testing.T) {
	const n = 200
	b := openKafka(t, brokers.Config{Kind: catalog.Kafka, Mode: catalog.Embedded, Settings: &catalog.KafkaSettings{Partitions: 4}})
	defer b.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	spec := brokertest.Spec(t, true)
	spec.Prefetch = 2 * n // a poll takes every record fetched
	d := brokertest.OpenDest(t, ctx, b, spec)
	p, err := d.Producer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var published sync.WaitGroup
	for i := 1; i <= n; i++ {
		published.Add(1)
		p.Publish(ctx, brokers.Message{Intent: i, Attempt: 1, Key: brokers.Key(i), Body: fmt.Appendf(nil, "intent %d", i)}, func(err error) {
			if err != nil {
				t.Errorf("publish intent %d: %v", i, err)
			}
			published.Done()
		})
	}
	published.Wait()
	p.Close(ctx)

	var mu sync.Mutex
	got := map[int]int{}
	take := func(c brokers.Consumer, wait time.Duration) error {
		qctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		del, err := c.Next(qctx)
		if err != nil {
			return err
		}
		mu.Lock()
		got[del.Intent]++
		mu.Unlock()
		return c.Ack(ctx, del)
	}
	consumer := func(gen int) brokers.Consumer {
		c, err := d.Consumer(ctx, gen)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		return c
	}
	// The first consumer polls (every partition is its own) and hands
	// over one record; the second joins and waits for its first.
	c1 := consumer(1)
	if err := take(c1, 20*time.Second); err != nil {
		t.Fatalf("consumer 1: %v", err)
	}
	c2 := consumer(2)
	if err := take(c2, 30*time.Second); err != nil {
		t.Fatalf("consumer 2 got nothing after joining: %v", err)
	}
	// Both go on until neither gets anything more.
	var wg sync.WaitGroup
	for _, c := range []brokers.Consumer{c1, c2} {
		wg.Go(func() {
			for {
				err := take(c, 2*time.Second)
				if errors.Is(err, context.DeadlineExceeded) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for i := 1; i <= n; i++ {
		if got[i] != 1 {
			t.Errorf("intent %d delivered %d times, want once", i, got[i])
		}
	}
}
