package nats_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/brokers/brokertest"
	"github.com/dqbench/dqbench/brokers/nats"
	"github.com/dqbench/dqbench/catalog"
)

// publishAll sends attempt of each intent and returns a channel per
// intent for its outcome.
func publishAll(ctx context.Context, p brokers.Producer, attempt int, intents ...int) map[int]chan error {
	done := map[int]chan error{}
	for _, i := range intents {
		ch := make(chan error, 1)
		done[i] = ch
		p.Publish(ctx, brokers.Message{Intent: i, Attempt: attempt, Key: brokers.Key(i), Body: fmt.Appendf(nil, "intent %d", i)}, func(err error) { ch <- err })
	}
	return done
}

// TestLoseConfirms: the chosen send's PubAck never reaches the publisher,
// whose publish then has no outcome until the producer closes; every other
// publish is confirmed and the stream stored all of them. The
// application's second send of the intent is confirmed: with msg_id
// business as a duplicate the stream dropped, with none as a second copy.
func TestLoseConfirms(t *testing.T) {
	t.Parallel() // each subtest waits out a timeout (ack_wait, a confirm): side by side
	for _, tc := range []struct {
		mode   catalog.Mode
		msgID  catalog.NATSMsgID
		stored int64
	}{
		{catalog.Embedded, catalog.BusinessMsgID, 5},
		{catalog.Embedded, catalog.NoMsgID, 6},
		{catalog.External, catalog.BusinessMsgID, 5},
		{catalog.External, catalog.NoMsgID, 6},
	} {
		t.Run(string(tc.mode)+"-"+string(tc.msgID), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			b := withMode(t, tc.mode, &catalog.NATSSettings{MsgID: tc.msgID})
			d := brokertest.OpenDest(t, ctx, b, brokertest.Spec(t, true))
			var mu sync.Mutex
			var lost [][2]int
			if err := brokers.Apply(ctx, d, brokers.LoseConfirms{
				Fires: func(intent, attempt int) bool { return intent == 3 && attempt == 1 },
				Lost:  func(intent, attempt int) { mu.Lock(); lost = append(lost, [2]int{intent, attempt}); mu.Unlock() },
			}); err != nil {
				t.Fatal(err)
			}
			p, err := d.Producer(ctx)
			if err != nil {
				t.Fatal(err)
			}
			done := publishAll(ctx, p, 1, 1, 2, 3, 4, 5)
			for _, i := range []int{1, 2, 4, 5} {
				select {
				case err := <-done[i]:
					if err != nil {
						t.Errorf("intent %d: %v, want confirmed", i, err)
					}
				case <-ctx.Done():
					t.Fatalf("intent %d: no outcome", i)
				}
			}
			select {
			case err := <-done[3]:
				t.Fatalf("intent 3 has an outcome (%v) although its PubAck was lost", err)
			case <-time.After(300 * time.Millisecond):
			}
			send(t, ctx, p, 3, 2) // the application's retry
			mu.Lock()
			if len(lost) != 1 || lost[0] != [2]int{3, 1} {
				t.Errorf("lost %v, want intent 3's first send", lost)
			}
			mu.Unlock()
			if got := backlog(t, ctx, d); got != tc.stored {
				t.Errorf("stream holds %d messages, want %d", got, tc.stored)
			}
			start := time.Now()
			p.Close(ctx)
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("Close took %v with a PubAck lost", took)
			}
			if err := <-done[3]; err == nil || errors.Is(err, brokers.ErrRefused) {
				t.Errorf("intent 3's first send ended with %v at close, want an unknown outcome", err)
			}
		})
	}
}

// withMode opens an embedded server, or the external one (skipping when
// there is none).
func withMode(t *testing.T, mode catalog.Mode, s *catalog.NATSSettings) brokers.Broker {
	t.Helper()
	if mode == catalog.Embedded {
		return embedded(t, s)
	}
	s.Defaults()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	b, err := nats.Open(ctx, brokers.Config{Kind: catalog.NATS, Mode: catalog.External, Addresses: []string{externalURL()}, Settings: s})
	if err != nil {
		if os.Getenv("DQBENCH_REQUIRE_BROKERS") == "1" {
			t.Fatalf("DQBENCH_REQUIRE_BROKERS=1 but: %v", err)
		}
		t.Skipf("no NATS with JetStream to test against (%v); set %s or start one (nats-server -js)", err, envURL)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	return b
}

// TestNoPower: a power the stream does not have says so.
func TestNoPower(t *testing.T) {
	ctx := t.Context()
	b := embedded(t, &catalog.NATSSettings{})
	d := brokertest.OpenDest(t, ctx, b, brokertest.Spec(t, true))
	err := brokers.Apply(ctx, d, brokers.LoseProduceResponses{Fires: func(int, int) bool { return true }, Lost: func([]int) {}})
	if !errors.Is(err, brokers.ErrNoPower) {
		t.Fatalf("LoseProduceResponses: %v, want ErrNoPower", err)
	}
}
