package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
)

func init() { All[catalog.SlowProcessing] = armSlowProcessing }

// armSlowProcessing arms slow-processing at its crash point, where the
// strategy has it and the destination's broker has an ack deadline
// (brokers.AckDeadline: not with ack: auto). It asks the loop to overrun
// (Overrun): hold the delivery, connected, until another instance has
// reached the same point with the same intent (the broker delivered it
// again once the deadline passed), at most twice the deadline plus
// slowGrace, then go on with it.
func armSlowProcessing(f Fault, env Env) (bool, error) {
	p := f.Params.(*catalog.SlowProcessingParams)
	if !env.Strategy.HasPoint(p.At) {
		return false, nil
	}
	var deadline time.Duration
	name := "ack_wait"
	armed, err := power(f, env, brokers.AckDeadline{Got: func(d time.Duration) { deadline = d }, Named: func(n string) { name = n }})
	if !armed || err != nil {
		return armed, err
	}
	reason := fmt.Sprintf("slow at %s past %s (%s), connected: another instance gets the intent again while this one holds it", p.At, name, deadline)
	env.Consumer.add(p.At, consumerFault{f: f, step: crashStep, fired: env.Fired, hits: onSchedule(f),
		act: func(context.Context, brokers.Delivery) (Action, string) {
			return Action{Kind: Overrun, For: 2*deadline + slowGrace}, reason
		}})
	return true, nil
}

// slowGrace is what slow-processing waits beyond twice the ack deadline
// for another instance to get the redelivery.
const slowGrace = 5 * time.Second
