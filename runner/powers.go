package runner

import (
	"context"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/recording"
)

// applyPower applies a fault's power (package faults decided it) to the
// adapter's consumer under the recording one, which only records; the
// history records the fault, and an instance it kills ends as a crash
// with its reason.
func applyPower(ctx context.Context, c *recording.Consumer, p brokers.Power) error {
	return brokers.Apply(ctx, c.Inner(), p)
}

// oneInFlight reports whether the adapter's consumer hands its application
// one message at a time, the next once the previous one is acked, as an
// MQTT client's router does (the handler, then PUBACK or PUBREC, then the
// next handler). The runner then acks before it takes the next delivery
// instead of overlapping the two: an ack that breaks the connection (a
// fault that loses MQTT acknowledgements) must not find the next
// delivery's effect applied, which the client would never have handed
// over.
func oneInFlight(c *recording.Consumer) bool {
	o, ok := c.Inner().(interface{ OneInFlight() bool })
	return ok && o.OneInFlight()
}
