package kafka

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
)

// TestConsumerHandshake: on a one-broker embedded cluster a consumer
// starts without ApiVersions (handshakeFree) and joins its group in one
// JoinGroup (v3, no MemberIDRequired round trip), and still gets its
// record; with three brokers, where leaders can move and KIP-320's
// validation needs the broker's versions, it asks and joins as kgo does by
// default.
func TestConsumerHandshake(t *testing.T) {
	for _, tc := range []struct {
		brokers int
		asks    bool
		joins   int32
	}{{1, false, 1}, {3, true, 2}} {
		t.Run(fmt.Sprintf("%d-brokers", tc.brokers), func(t *testing.T) {
			asks, joins := consumerStart(t, tc.brokers)
			if asks != tc.asks {
				t.Errorf("consumer sent ApiVersions: %v, want %v", asks, tc.asks)
			}
			if joins != tc.joins {
				t.Errorf("consumer sent %d JoinGroup requests, want %d", joins, tc.joins)
			}
		})
	}
}

// consumerStart publishes one record, then starts a consumer and takes
// it, and reports whether any ApiVersions reached the cluster in between,
// and how many JoinGroup requests.
func consumerStart(t *testing.T, n int) (asks bool, joins int32) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	k, err := StartEmbedded(n)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	spec := brokers.DestinationSpec{Name: fmt.Sprintf("handshake-%d", n), Acks: catalog.AcksAll, Window: 1, Prefetch: 8}
	d, err := k.Open(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(context.WithoutCancel(ctx))
	p, err := d.Producer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	p.Publish(ctx, brokers.Message{Intent: 1, Attempt: 1, Key: brokers.Key(1), Body: []byte("intent 1")}, func(err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var asked, joined atomic.Int32
	for key, n := range map[kmsg.Key]*atomic.Int32{kmsg.ApiVersions: &asked, kmsg.JoinGroup: &joined} {
		k.cluster.ControlKey(int16(key), func(kmsg.Request) (kmsg.Response, error, bool) {
			k.cluster.KeepControl()
			n.Add(1)
			return nil, nil, false
		})
	}
	c, err := d.Consumer(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.WithoutCancel(ctx))
	del, err := c.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if del.Intent != 1 {
		t.Fatalf("delivered intent %d, want 1", del.Intent)
	}
	return asked.Load() > 0, joined.Load()
}
