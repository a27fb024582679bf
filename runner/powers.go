package runner

import (
	"context"
	"errors"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/recording"
)

// The powers a consumer-side fault needs, asked of the adapter's consumer
// under the recording: recording clients only record.

// resetConnection resets the instance's network connection
// (brokers.ConnectionResetter); the history records the fault, and the
// instance's end as a crash with its reason.
func resetConnection(ctx context.Context, c *recording.Consumer) error {
	r, ok := c.Inner().(brokers.ConnectionResetter)
	if !ok {
		return errors.New("this broker's consumer cannot have its connection reset")
	}
	return r.ResetConnection(ctx)
}

// partition cuts the instance off from the broker for d
// (brokers.Partitioner).
func partition(ctx context.Context, c *recording.Consumer, d time.Duration) error {
	p, ok := c.Inner().(brokers.Partitioner)
	if !ok {
		return errors.New("this broker's consumer cannot be partitioned")
	}
	return p.Partition(ctx, d)
}

// slow delays the instance's network traffic (brokers.Slower).
func slow(ctx context.Context, c *recording.Consumer, latency, d time.Duration) error {
	s, ok := c.Inner().(brokers.Slower)
	if !ok {
		return errors.New("this broker's consumer cannot be slowed")
	}
	return s.Slow(ctx, latency, d)
}

// syncAcks waits until the broker has applied the acks written so far,
// where the adapter's Ack does not (brokers.AckSyncer); otherwise there is
// nothing to wait for.
func syncAcks(ctx context.Context, c *recording.Consumer) error {
	if s, ok := c.Inner().(brokers.AckSyncer); ok {
		return s.SyncAcks(ctx)
	}
	return nil
}

// oneInFlight reports whether the adapter's consumer hands its application
// one message at a time, the next once the previous one is acked, as an
// MQTT client's router does (the handler, then PUBACK or PUBREC, then the
// next handler). The runner then acks before it takes the next delivery
// instead of overlapping the two: an ack that breaks the connection (an
// MQTT ack-lost fault) must not find the next delivery's effect applied,
// which the client would never have handed over.
func oneInFlight(c *recording.Consumer) bool {
	o, ok := c.Inner().(interface{ OneInFlight() bool })
	return ok && o.OneInFlight()
}
