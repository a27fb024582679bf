package kafka

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
)

// TestLeaderMoveKeepsTheLog: a consumer that has read everything and then
// sees its partition's leader move, with nothing produced since, asks the
// new leader where the epoch it consumed at ended (KIP-320). The answer
// must be the end of the log, not "unknown epoch": kfake alone answers
// that when no batch carries a later epoch yet, and the client then
// resets to the start of the partition and reads everything again. Each
// case moves the leader once after the last record was consumed, with
// plain and transactional (read_committed) consumers.
func TestLeaderMoveKeepsTheLog(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spec  brokers.DestinationSpec
		moves int
	}{
		{"read_uncommitted", brokers.DestinationSpec{Acks: catalog.AcksAll, Window: 16, Prefetch: 64, Idempotent: true}, 1},
		{"read_uncommitted-twice", brokers.DestinationSpec{Acks: catalog.AcksAll, Window: 16, Prefetch: 64, Idempotent: true}, 2},
		{"read_committed-stage", brokers.DestinationSpec{Acks: catalog.AcksAll, Window: 16, Prefetch: 64, Idempotent: true,
			Settings: &catalog.KafkaSettings{KafkaConsumer: catalog.KafkaConsumer{Isolation: catalog.ReadCommitted}},
			Stage:    &brokers.StageSpec{Transactional: true}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) { testLeaderMove(t, tc.spec, tc.moves) })
	}
}

func testLeaderMove(t *testing.T, spec brokers.DestinationSpec, moves int) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	k, err := StartEmbedded(3)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	k.partitions = 1
	// Sees each OffsetForLeaderEpoch (registered first: it runs before
	// anything dqbench registers, and leaves the request to them).
	validated := make(chan struct{}, 64)
	k.cluster.ControlKey(int16(kmsg.OffsetForLeaderEpoch), func(kmsg.Request) (kmsg.Response, error, bool) {
		select {
		case validated <- struct{}{}:
		default:
		}
		return nil, nil, false
	})
	spec.Name = fmt.Sprintf("leader-move-%d", time.Now().UnixNano()%1e9)
	d, err := k.Open(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(context.WithoutCancel(ctx))
	const n = 20
	// Intents n+1 .. n+moves each move the leader once produced.
	moved := make(chan int, moves)
	if err := brokers.Apply(ctx, d, brokers.MoveLeaders{
		Fires: func(in, attempt int) bool { return in > n && in <= n+moves && attempt == 1 },
		Moved: func(in int, _ []string) { moved <- in },
	}); err != nil {
		t.Fatal(err)
	}
	p, err := d.Producer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.WithoutCancel(ctx))
	publish := func(in int) {
		t.Helper()
		done := make(chan error, 1)
		p.Publish(ctx, brokers.Message{Intent: in, Attempt: 1, Key: brokers.Key(in), Body: fmt.Appendf(nil, "intent %d", in)},
			func(err error) { done <- err })
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("publish %d: %v", in, err)
			}
		case <-ctx.Done():
			t.Fatalf("publish %d: %v", in, ctx.Err())
		}
	}
	// read takes the next record: a consumer's, or with a stage the
	// stage's (one transaction per record when transactional).
	var read func() (brokers.Delivery, error)
	if spec.Stage != nil {
		st, err := d.(brokers.Stager).Stage(ctx, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close(context.WithoutCancel(ctx))
		read = func() (brokers.Delivery, error) {
			if err := st.Begin(); err != nil {
				return brokers.Delivery{}, err
			}
			del, err := st.Next(ctx)
			if err != nil {
				return del, err
			}
			fwd := make(chan error, 1)
			st.Forward(ctx, del, del.Body, func(_ string, err error) { fwd <- err })
			if err := <-fwd; err != nil {
				return del, fmt.Errorf("forward: %w", err)
			}
			if ok, err := st.Commit(ctx); !ok || err != nil {
				return del, fmt.Errorf("commit (committed %v): %v", ok, err)
			}
			return del, nil
		}
	} else {
		c, err := d.Consumer(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(context.WithoutCancel(ctx))
		read = func() (brokers.Delivery, error) {
			del, err := c.Next(ctx)
			if err != nil {
				return del, err
			}
			return del, c.Ack(ctx, del)
		}
	}
	consume := func(want int) {
		t.Helper()
		del, err := read()
		if err != nil {
			t.Fatalf("consuming intent %d: %v", want, err)
		}
		if del.Intent != want {
			t.Fatalf("got intent %d at %s (redelivered %v), want %d: the consumer went back in the log", del.Intent, del.Position, del.Redelivered, want)
		}
	}
	for in := 1; in <= n; in++ {
		publish(in)
	}
	for in := 1; in <= n; in++ {
		consume(in)
	}
	for in := n + 1; in <= n+moves; in++ {
		for len(validated) > 0 {
			<-validated
		}
		// The last record before the move: nothing carries the new
		// epoch until the next publish.
		publish(in)
		select {
		case <-moved:
		case <-ctx.Done():
			t.Fatal("the leader never moved")
		}
		consume(in)
		// The consumer learns of the new leader and validates what it
		// consumed before anything is produced at the new epoch.
		select {
		case <-validated:
		case <-ctx.Done():
			t.Fatal("the consumer never asked the new leader where its epoch ended")
		}
	}
	publish(n + moves + 1)
	consume(n + moves + 1)
}
