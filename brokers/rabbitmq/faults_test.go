package rabbitmq_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/brokers/brokertest"
	"github.com/dqbench/dqbench/catalog"
)

// The adapter's fault powers on a real broker, each through the in-process
// toxiproxy the clients always go through.

func faultDest(t *testing.T, ctx context.Context, spec func(*brokers.DestinationSpec)) brokers.Destination {
	t.Helper()
	b := open(catalog.ClassicQueue)(t)
	t.Cleanup(func() { b.Close() })
	s := brokertest.Spec(t, true)
	if spec != nil {
		spec(&s)
	}
	return brokertest.OpenDest(t, ctx, b, s)
}

func publish(t *testing.T, ctx context.Context, p brokers.Producer, intents ...int) map[int]chan error {
	t.Helper()
	done := map[int]chan error{}
	for _, i := range intents {
		ch := make(chan error, 1)
		done[i] = ch
		p.Publish(ctx, brokers.Message{Intent: i, Attempt: 1, Key: brokers.Key(i), Body: []byte("{}")}, func(err error) { ch <- err })
	}
	return done
}

func wait(t *testing.T, what string, ch chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no outcome in 10s", what)
		return nil
	}
}

// TestLoseConfirms: the withheld confirm's publish has no outcome until the
// producer closes (then an unknown one); every other publish is confirmed,
// and the broker stored all of them.
func TestLoseConfirms(t *testing.T) {
	reachable(t)
	ctx := t.Context()
	d := faultDest(t, ctx, nil)
	var mu sync.Mutex
	var lost []int
	if err := brokers.Apply(ctx, d, brokers.LoseConfirms{
		Fires: func(intent, attempt int) bool { return intent == 3 && attempt == 1 },
		Lost:  func(intent, _ int) { mu.Lock(); lost = append(lost, intent); mu.Unlock() },
	}); err != nil {
		t.Fatal(err)
	}
	p, err := d.Producer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := publish(t, ctx, p, 1, 2, 3, 4, 5)
	for _, i := range []int{1, 2, 4, 5} {
		if err := wait(t, fmt.Sprintf("intent %d", i), done[i]); err != nil {
			t.Errorf("intent %d: %v, want confirmed", i, err)
		}
	}
	select {
	case err := <-done[3]:
		t.Fatalf("intent 3 has an outcome (%v) although its confirm was withheld", err)
	case <-time.After(300 * time.Millisecond):
	}
	p.Close(ctx)
	if err := wait(t, "intent 3 after Close", done[3]); err == nil {
		t.Error("intent 3 confirmed after all")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lost) != 1 || lost[0] != 3 {
		t.Errorf("lost %v, want [3]", lost)
	}
	if n, err := d.Backlog(ctx); err != nil || n != 5 {
		t.Errorf("backlog %d, %v: want the 5 stored", n, err)
	}
}

// TestLoseAcks: the lost ack is reported done, the connection then breaks,
// and a new consumer gets the intent again, flagged redelivered.
func TestLoseAcks(t *testing.T) {
	reachable(t)
	ctx := t.Context()
	d := faultDest(t, ctx, nil)
	var mu sync.Mutex
	var lost []int
	if err := brokers.Apply(ctx, d, brokers.LoseAcks{
		Fires: func(intent, attempt int) bool { return intent == 2 && attempt == 1 },
		Lost:  func(intent, _ int) { mu.Lock(); lost = append(lost, intent); mu.Unlock() },
	}); err != nil {
		t.Fatalf("LoseAcks: %v", err)
	}
	p, err := d.Producer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := publish(t, ctx, p, 1, 2, 3)
	for i, ch := range done {
		if err := wait(t, fmt.Sprintf("intent %d", i), ch); err != nil {
			t.Fatal(err)
		}
	}
	p.Close(ctx)

	c, err := d.Consumer(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	for want := 1; want <= 2; want++ {
		del, err := c.Next(ctx)
		if err != nil || del.Intent != want {
			t.Fatalf("delivery %d: intent %d, %v", want, del.Intent, err)
		}
		del.Attempt = 1
		if err := c.Ack(ctx, del); err != nil {
			t.Fatalf("Ack intent %d: %v (a lost ack is reported done)", want, err)
		}
	}
	if del, err := c.Next(ctx); err == nil {
		t.Fatalf("after the lost ack the consumer got intent %d: the connection should be broken", del.Intent)
	}
	c.Abandon()
	c2, err := d.Consumer(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close(ctx)
	del, err := c2.Next(ctx)
	if err != nil || del.Intent != 2 || !del.Redelivered {
		t.Fatalf("the new consumer got intent %d (redelivered %v), %v: want 2 again, flagged", del.Intent, del.Redelivered, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lost) != 1 || lost[0] != 2 {
		t.Errorf("lost %v, want [2]", lost)
	}
}

// TestNackAndDeadLetters: requeue brings a delivery back; a rejected one
// arrives on the dead-letter queue, which Backlog counts until it is acked
// there.
func TestNackAndDeadLetters(t *testing.T) {
	reachable(t)
	ctx := t.Context()
	d := faultDest(t, ctx, func(s *brokers.DestinationSpec) { s.DeadLetter = true })
	p, err := d.Producer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, ch := range publish(t, ctx, p, 1) {
		if err := wait(t, fmt.Sprintf("intent %d", i), ch); err != nil {
			t.Fatal(err)
		}
	}
	p.Close(ctx)
	c, err := d.Consumer(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	del, err := c.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.(brokers.Nacker).Nack(ctx, del, true); err != nil {
		t.Fatal(err)
	}
	if del, err = c.Next(ctx); err != nil || del.Intent != 1 || !del.Redelivered {
		t.Fatalf("after a requeue: intent %d (redelivered %v), %v", del.Intent, del.Redelivered, err)
	}
	if err := c.(brokers.Nacker).Nack(ctx, del, false); err != nil {
		t.Fatal(err)
	}
	dl, err := d.(brokers.DeadLetterer).DeadLetters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer dl.Close(ctx)
	dead, err := dl.Next(ctx)
	if err != nil || dead.Intent != 1 || dead.Position != del.Position {
		t.Fatalf("dead-letter queue: intent %d at %q, %v; want 1 at %q", dead.Intent, dead.Position, err, del.Position)
	}
	if n, err := d.Backlog(ctx); err != nil || n != 1 {
		t.Errorf("backlog %d, %v: want the dead letter not yet acked", n, err)
	}
	if err := dl.Ack(ctx, dead); err != nil {
		t.Fatal(err)
	}
	if n, err := d.Backlog(ctx); err != nil || n != 0 {
		t.Errorf("backlog %d, %v: want 0", n, err)
	}
}

// TestRetryQueue: with on_failure retry-queue a rejected delivery goes to
// the wait queue and comes back after its TTL as a new message (not
// flagged redelivered) whose x-death counts two dead-letterings (rejected
// here, expired there); a wait queue bounded at one message with
// reject-publish drops the second rejected message, and nobody hears of
// it: Nack succeeds, and afterwards the broker holds nothing.
func TestRetryQueue(t *testing.T) {
	reachable(t)
	ctx := t.Context()
	d := faultDest(t, ctx, func(s *brokers.DestinationSpec) {
		s.Settings = &catalog.RabbitMQSettings{QueueType: catalog.ClassicQueue, RabbitMQConsumer: catalog.RabbitMQConsumer{
			OnFailure: catalog.FailRetryQueue, RetryDelay: catalog.Duration(100 * time.Millisecond),
			DeadLetterMaxLength: 1, DeadLetterOverflow: catalog.RejectPublish,
		}}
	})
	p, err := d.Producer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, ch := range publish(t, ctx, p, 1, 2) {
		if err := wait(t, fmt.Sprintf("intent %d", i), ch); err != nil {
			t.Fatal(err)
		}
	}
	p.Close(ctx)
	c, err := d.Consumer(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	first := map[int]brokers.Delivery{}
	for range 2 {
		del, err := c.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		first[del.Intent] = del
		if err := c.(brokers.Nacker).Nack(ctx, del, false); err != nil {
			t.Fatalf("reject intent %d: %v", del.Intent, err)
		}
	}
	back, err := c.Next(ctx)
	if err != nil || back.Intent != 1 || back.Redelivered || back.Deaths != 2 || back.Position != first[1].Position {
		t.Fatalf("back from the wait queue: intent %d (redelivered %v, deaths %d, at %q), %v; want intent 1, not flagged, deaths 2, at %q",
			back.Intent, back.Redelivered, back.Deaths, back.Position, err, first[1].Position)
	}
	if err := c.Ack(ctx, back); err != nil {
		t.Fatal(err)
	}
	if n, err := d.Backlog(ctx); err != nil || n != 0 {
		t.Errorf("backlog %d, %v: want 0 (intent 2 dropped by the full wait queue)", n, err)
	}
}
