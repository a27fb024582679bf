package kafka_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/brokers/kafka"
	"github.com/dqbench/dqbench/catalog"
)

func TestZZPhase(t *testing.T) {
	if os.Getenv("ZZ") == "" {
		t.Skip()
	}
	ctx := context.Background()
	b, err := kafka.Open(ctx, brokers.Config{Kind: catalog.Kafka, Mode: catalog.Embedded})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	d, err := b.Open(ctx, brokers.DestinationSpec{Name: "phase", Idempotent: true, Acks: catalog.AcksAll, Window: 256, Prefetch: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(ctx)
	p, _ := d.Producer(ctx)
	const n = 3000
	done := make(chan error, n)
	for i := 1; i <= n; i++ {
		p.Publish(ctx, brokers.Message{Intent: i, Attempt: 1, Key: brokers.Key(i), Body: []byte("x")}, func(err error) { done <- err })
	}
	for range n {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	p.Close(ctx)
	var total, tAbandon, tNew, tFirst time.Duration
	const crashes = 40
	gen := 1
	c, _ := d.Consumer(ctx, gen)
	for k := 0; k < crashes; k++ {
		for j := 0; j < 50; j++ {
			dl, err := c.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Ack(ctx, dl); err != nil {
				t.Fatal(err)
			}
		}
		dl, _ := c.Next(ctx)
		_ = dl
		t0 := time.Now()
		c.Abandon()
		t1 := time.Now()
		gen++
		c, _ = d.Consumer(ctx, gen)
		t2 := time.Now()
		if _, err := c.Next(ctx); err != nil {
			t.Fatal(err)
		}
		t3 := time.Now()
		tAbandon += t1.Sub(t0)
		tNew += t2.Sub(t1)
		tFirst += t3.Sub(t2)
		total += t3.Sub(t0)
	}
	c.Close(ctx)
	fmt.Printf("per crash: total %v abandon %v new %v first %v\n", total/crashes, tAbandon/crashes, tNew/crashes, tFirst/crashes)
}
