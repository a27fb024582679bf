package rabbitmq_test

import (
	"slices"
	"testing"

	"github.com/dqbench/dqbench/brokers"
)

// TestAbandonDropping: with autoAck the broker pushes the ready messages to
// the consumer and forgets each as it sends it. A consumer abandoned after
// taking one names every other one it had been sent as dropped (read after
// basic.cancel, before the connection closes); none is named twice, and
// what it names plus what the queue still holds is every message.
func TestAbandonDropping(t *testing.T) {
	reachable(t)
	ctx := t.Context()
	d := faultDest(t, ctx, func(s *brokers.DestinationSpec) { s.AutoAck = true })
	p, err := d.Producer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	var intents []int
	for i := 1; i <= n; i++ {
		intents = append(intents, i)
	}
	done := publish(t, ctx, p, intents...)
	for _, i := range intents {
		if err := wait(t, "publish", done[i]); err != nil {
			t.Fatalf("intent %d: %v", i, err)
		}
	}
	p.Close(ctx)
	c, err := d.Consumer(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	first, err := c.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dr, ok := c.(brokers.Dropper)
	if !ok {
		t.Fatal("the RabbitMQ consumer is not a brokers.Dropper")
	}
	dropped := dr.AbandonDropping()
	got := append([]int{first.Intent}, dropped...)
	slices.Sort(got)
	if len(slices.Compact(slices.Clone(got))) != len(got) {
		t.Fatalf("an intent named twice: %v", got)
	}
	if len(dropped) == 0 {
		t.Fatalf("nothing dropped although the broker had %d more ready for an autoAck consumer", n-1)
	}
	left, err := d.Backlog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if int(left)+len(got) != n {
		t.Errorf("taken 1, dropped %d, %d left in the queue: want %d in all", len(dropped), left, n)
	}
}
