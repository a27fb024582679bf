package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
)

// failoverLimit bounds one failover: waiting for the other variants,
// finding the leader, stopping it.
const failoverLimit = 2 * time.Minute

// armLeaderFailover stops the node leading the variant's queue when the
// consumer reaches the fault's crash point with a chosen intent; the
// consumer then goes on (its ack meets a dead connection, and it
// reconnects to a survivor).
func armLeaderFailover(f Fault, env Env) (bool, error) {
	p := f.Params.(*catalog.LeaderFailoverParams)
	stopper, ok := env.Dest.(brokers.LeaderStopper)
	if !ok {
		return false, fmt.Errorf("fault %s: this broker cannot stop a queue's leader (it needs broker kind: rabbitmq, mode: managed)", f.Name)
	}
	if !env.Strategy.HasPoint(p.At) {
		return false, nil
	}
	if err := stopper.JoinFailover(f.Name); err != nil {
		return false, err
	}
	if env.Crashes.at == nil {
		env.Crashes.at = map[catalog.CrashPoint][]crash{}
	}
	env.Crashes.at[p.At] = append(env.Crashes.at[p.At], crash{f: f, fired: env.Fired, act: func(d brokers.Delivery) string {
		ctx, cancel := context.WithTimeout(context.Background(), failoverLimit)
		defer cancel()
		what, err := stopper.StopLeader(ctx, f.Name, d.Intent, d.Attempt)
		if err != nil {
			return "the failover failed: " + err.Error()
		}
		return what
	}})
	return true, nil
}
