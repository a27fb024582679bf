package faults

import (
	"context"
	"errors"
	"fmt"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
)

// armLeaderFailover stops the node leading the variant's queue or stream
// (or makes the stream's leader step down) when the
// consumer reaches the fault's crash point with a chosen intent; the
// consumer then goes on (its ack meets a dead connection, and it
// reconnects to a survivor).
func armLeaderFailover(f Fault, env Env) (bool, error) {
	p := f.Params.(*catalog.LeaderFailoverParams)
	if !env.Strategy.HasPoint(p.At) {
		return false, nil
	}
	err := brokers.Apply(context.Background(), env.Dest, brokers.JoinFailover{Fault: f.Name})
	if errors.Is(err, brokers.ErrNoPower) {
		return false, fmt.Errorf("fault %s: %w (it needs broker kind: rabbitmq or nats, mode: managed)", f.Name, err)
	}
	if err != nil {
		return false, err
	}
	env.Consumer.add(p.At, consumerFault{f: f, step: crashStep, fired: env.Fired, hits: onSchedule(f), act: stopLeader(f, env.Dest)})
	return true, nil
}
