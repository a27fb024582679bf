package nats_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/brokers/brokertest"
	"github.com/dqbench/dqbench/brokers/nats"
	"github.com/dqbench/dqbench/catalog"
)

func embedded(t *testing.T, s *catalog.NATSSettings) brokers.Broker {
	t.Helper()
	s.Defaults()
	b, err := nats.Open(t.Context(), brokers.Config{Kind: catalog.NATS, Mode: catalog.Embedded, Settings: s})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	return b
}

// send publishes one attempt of intent and waits for its outcome.
func send(t *testing.T, ctx context.Context, p brokers.Producer, intent, attempt int) {
	t.Helper()
	done := make(chan error, 1)
	p.Publish(ctx, brokers.Message{Intent: intent, Attempt: attempt, Key: brokers.Key(intent), Body: fmt.Appendf(nil, "intent %d", intent)}, func(err error) { done <- err })
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("intent %d attempt %d: %v", intent, attempt, err)
		}
	case <-ctx.Done():
		t.Fatalf("intent %d attempt %d: no outcome", intent, attempt)
	}
}

func backlog(t *testing.T, ctx context.Context, d brokers.Destination) int64 {
	t.Helper()
	n, err := d.Backlog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestMsgID: each intent is sent twice (an application retry); the stream
// drops the second copy only when both carry the same Nats-Msg-Id within
// the duplicate window, and confirms it either way.
func TestMsgID(t *testing.T) {
	for _, tc := range []struct {
		msgID  catalog.NATSMsgID
		window time.Duration
		stored int64
	}{
		{catalog.BusinessMsgID, 0, 3},
		{catalog.PerSendMsgID, 0, 6},
		{catalog.NoMsgID, 0, 6},
		{catalog.BusinessMsgID, 100 * time.Millisecond, 6},
	} {
		t.Run(fmt.Sprintf("%s-%s", tc.msgID, tc.window), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			b := embedded(t, &catalog.NATSSettings{MsgID: tc.msgID, DuplicateWindow: catalog.Duration(tc.window)})
			d := brokertest.OpenDest(t, ctx, b, brokertest.Spec(t, true))
			p, err := d.Producer(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(ctx)
			for i := 1; i <= 3; i++ {
				send(t, ctx, p, i, 1)
			}
			if tc.window > 0 {
				time.Sleep(3 * tc.window) // past the window: the ids are forgotten
			}
			for i := 1; i <= 3; i++ {
				send(t, ctx, p, i, 2)
			}
			if got := backlog(t, ctx, d); got != tc.stored {
				t.Errorf("stream holds %d messages, want %d", got, tc.stored)
			}
		})
	}
}

// TestAckNone: with ack: auto the consumer has the AckNone policy: the
// backlog counts what the server sent and no consumer has handed on, a
// crash loses the message in hand, and nothing is delivered again.
func TestAckNone(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	b := embedded(t, &catalog.NATSSettings{AckWait: catalog.Duration(500 * time.Millisecond)})
	spec := brokertest.Spec(t, true)
	spec.AutoAck = true
	d := brokertest.OpenDest(t, ctx, b, spec)
	p, err := d.Producer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 10; i++ {
		send(t, ctx, p, i, 1)
	}
	p.Close(ctx)
	c1, err := d.Consumer(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for range 3 {
		del, err := c1.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		seen[del.Intent] = true
		if err := c1.Ack(ctx, del); err != nil {
			t.Fatal(err)
		}
	}
	if got := backlog(t, ctx, d); got != 7 {
		t.Errorf("backlog after 3 of 10 handed on = %d, want 7", got)
	}
	held, err := c1.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := backlog(t, ctx, d); got != 7 {
		t.Errorf("backlog with one more in hand = %d, want 7 (not yet handed on)", got)
	}
	c1.Abandon() // the message in hand is lost
	if got := backlog(t, ctx, d); got != 6 {
		t.Errorf("backlog after the crash = %d, want 6", got)
	}
	c2, err := d.Consumer(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close(ctx)
	for range 6 {
		del, err := c2.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if seen[del.Intent] || del.Intent == held.Intent || del.Redelivered {
			t.Errorf("intent %d delivered again (redelivered %v)", del.Intent, del.Redelivered)
		}
		seen[del.Intent] = true
		if err := c2.Ack(ctx, del); err != nil {
			t.Fatal(err)
		}
	}
	if got := backlog(t, ctx, d); got != 0 {
		t.Errorf("backlog at the end = %d, want 0", got)
	}
	qctx, qcancel := context.WithTimeout(ctx, time.Second) // past ack_wait
	defer qcancel()
	if del, err := c2.Next(qctx); err == nil {
		t.Errorf("intent %d delivered after everything was handed on", del.Intent)
	}
}
