package nats_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/brokers/brokertest"
	"github.com/dqbench/dqbench/catalog"
)

// stored opens a destination with settings s on a broker of mode, with
// intents 1..n published, and a consumer on it.
func stored(t *testing.T, ctx context.Context, mode catalog.Mode, s *catalog.NATSSettings, spec brokers.DestinationSpec, n int, arm ...brokers.Power) (brokers.Destination, brokers.Consumer) {
	t.Helper()
	b := withMode(t, mode, s)
	d := brokertest.OpenDest(t, ctx, b, spec)
	for _, p := range arm {
		if err := brokers.Apply(ctx, d, p); err != nil {
			t.Fatal(err)
		}
	}
	p, err := d.Producer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		send(t, ctx, p, i, 1)
	}
	p.Close(ctx)
	c, err := d.Consumer(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return d, c
}

// nextOf returns the next delivery, numbering its attempt per intent as
// the recording consumer would.
func nextOf(t *testing.T, ctx context.Context, c brokers.Consumer, attempts map[int]int) brokers.Delivery {
	t.Helper()
	d, err := c.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	attempts[d.Intent]++
	d.Attempt = attempts[d.Intent]
	return d
}

// TestLoseAcks: the chosen delivery's ack never reaches the server, while
// the connection stays up. With a plain ack the consumer does not know:
// Ack returns nil and the server delivers the message again once ack_wait
// has passed. With the double ack (ack: sync) Ack says the ack was not
// confirmed; acked again, it gets through, and the server holds nothing
// more (no redelivery to come).
func TestLoseAcks(t *testing.T) {
	t.Parallel() // each subtest waits out a timeout (ack_wait, a confirm): side by side
	for _, tc := range []struct {
		mode catalog.Mode
		ack  catalog.NATSAck
	}{
		{catalog.Embedded, catalog.PlainAck},
		{catalog.Embedded, catalog.SyncAck},
		{catalog.External, catalog.PlainAck},
		{catalog.External, catalog.SyncAck},
	} {
		t.Run(string(tc.mode)+"-"+string(tc.ack), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			var mu sync.Mutex
			var lost [][2]int
			spec := brokertest.Spec(t, true)
			spec.Prefetch = 1
			d, c := stored(t, ctx, tc.mode, &catalog.NATSSettings{AckWait: catalog.Duration(time.Second), Ack: tc.ack}, spec, 3,
				brokers.LoseAcks{
					Fires: func(intent, attempt int) bool { return intent == 2 && attempt == 1 },
					Lost:  func(intent, attempt int) { mu.Lock(); lost = append(lost, [2]int{intent, attempt}); mu.Unlock() },
				})
			attempts := map[int]int{}
			for i := 1; i <= 3; i++ {
				del := nextOf(t, ctx, c, attempts)
				err := c.Ack(ctx, del)
				switch {
				case del.Intent == 2 && tc.ack == catalog.SyncAck:
					if !errors.Is(err, brokers.ErrAckUnconfirmed) {
						t.Fatalf("double ack of the lost ack: %v, want ErrAckUnconfirmed", err)
					}
					if err := c.Ack(ctx, del); err != nil {
						t.Fatalf("double ack sent again: %v", err)
					}
				case err != nil:
					t.Fatalf("ack of intent %d: %v", del.Intent, err)
				}
			}
			mu.Lock()
			if len(lost) != 1 || lost[0] != [2]int{2, 1} {
				t.Errorf("lost %v, want intent 2's first delivery's ack", lost)
			}
			mu.Unlock()
			if tc.ack == catalog.SyncAck {
				if got := backlog(t, ctx, d); got != 0 {
					t.Errorf("backlog after the ack sent again = %d, want 0 (the server has every ack)", got)
				}
				return
			}
			if got := backlog(t, ctx, d); got < 1 {
				t.Errorf("backlog with a lost ack = %d, want at least 1", got)
			}
			del := nextOf(t, ctx, c, attempts) // after ack_wait
			if del.Intent != 2 || !del.Redelivered {
				t.Fatalf("got intent %d (redelivered %v), want intent 2 again", del.Intent, del.Redelivered)
			}
			if err := c.Ack(ctx, del); err != nil {
				t.Fatal(err)
			}
			applied := brokers.Apply(ctx, c, brokers.SyncAcks{})
			if applied != nil {
				t.Fatal(applied)
			}
			waitBacklog(t, ctx, d, 0)
		})
	}
}

// waitBacklog waits until the backlog is want (a plain ack reaches the
// server's count a moment after it is written).
func waitBacklog(t *testing.T, ctx context.Context, d brokers.Destination, want int64) {
	t.Helper()
	for {
		got := backlog(t, ctx, d)
		if got == want {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("backlog %d, want %d", got, want)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestDeadLetters: with max_deliver 2, a message nakked on each delivery
// is given up after its second and read back as a dead letter, with its
// intent and stream sequence; a terminated message (on_failure: reject)
// is read back at once. The healthy message is not.
func TestDeadLetters(t *testing.T) {
	t.Parallel() // each subtest waits out a timeout (ack_wait, a confirm): side by side
	for _, tc := range []struct {
		mode    catalog.Mode
		requeue bool
	}{
		{catalog.Embedded, true},
		{catalog.Embedded, false},
		{catalog.External, true},
		{catalog.External, false},
	} {
		name := string(tc.mode) + "-term"
		if tc.requeue {
			name = string(tc.mode) + "-nak"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			spec := brokertest.Spec(t, true)
			spec.DeadLetter = true
			d, c := stored(t, ctx, tc.mode, &catalog.NATSSettings{AckWait: catalog.Duration(time.Second), MaxDeliver: 2}, spec, 2)
			dl, err := d.(brokers.DeadLetterer).DeadLetters(ctx)
			if err != nil {
				t.Fatal(err)
			}
			attempts := map[int]int{}
			want := 2 // deliveries of intent 1 before the server gives it up
			if !tc.requeue {
				want = 1
			}
			for attempts[1] < want || attempts[2] < 1 {
				del := nextOf(t, ctx, c, attempts)
				if del.Intent == 2 {
					if err := c.Ack(ctx, del); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if err := c.(brokers.Nacker).Nack(ctx, del, tc.requeue); err != nil {
					t.Fatal(err)
				}
			}
			dead, err := dl.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if dead.Intent != 1 || dead.Position == "" {
				t.Errorf("dead letter: intent %d at %q, want intent 1 with its stream sequence", dead.Intent, dead.Position)
			}
			waitBacklog(t, ctx, d, 0)
			qctx, qcancel := context.WithTimeout(ctx, 1500*time.Millisecond) // past ack_wait
			defer qcancel()
			if del, err := c.Next(qctx); err == nil {
				t.Errorf("intent %d (attempt %d) delivered after the server gave intent 1 up", del.Intent, attempts[del.Intent]+1)
			}
			if more, err := dl.Next(qctx); err == nil {
				t.Errorf("a second dead letter: intent %d", more.Intent)
			}
		})
	}
}

// TestAckDeadline: the destination says how long its consumer may hold a
// message (ack_wait); with AckNone it has no deadline.
func TestAckDeadline(t *testing.T) {
	ctx := t.Context()
	b := embedded(t, &catalog.NATSSettings{AckWait: catalog.Duration(1500 * time.Millisecond)})
	d := brokertest.OpenDest(t, ctx, b, brokertest.Spec(t, true))
	var got time.Duration
	if err := brokers.Apply(ctx, d, brokers.AckDeadline{Got: func(w time.Duration) { got = w }}); err != nil || got != 1500*time.Millisecond {
		t.Errorf("AckDeadline: %v, %v; want 1.5s", got, err)
	}
	spec := brokertest.Spec(t, true)
	spec.AutoAck = true
	d2 := brokertest.OpenDest(t, ctx, b, spec)
	if err := brokers.Apply(ctx, d2, brokers.AckDeadline{Got: func(time.Duration) {}}); !errors.Is(err, brokers.ErrNowhere) {
		t.Errorf("AckDeadline with AckNone: %v, want ErrNowhere", err)
	}
	if err := brokers.Apply(ctx, d2, brokers.LoseAcks{Fires: func(int, int) bool { return true }, Lost: func(int, int) {}}); !errors.Is(err, brokers.ErrNowhere) {
		t.Errorf("LoseAcks with AckNone: %v, want ErrNowhere", err)
	}
}
