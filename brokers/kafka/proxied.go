package kafka

import (
	"context"
	"fmt"
	"time"

	"github.com/dqbench/dqbench/brokers"
	nfkafka "github.com/dqbench/dqbench/netfault/kafka"
)

// proxiedDest is a topic on a real Kafka (managed or external), whose
// clients reach it through dqbench's relays (proxy.go): the Kafka
// protocol filter there injects the produce faults the embedded broker
// injects inside kfake (faults.go).
type proxiedDest struct{ *topicDest }

var (
	_ brokers.Destination = proxiedDest{}
	_ brokers.Powered     = proxiedDest{}
)

// Apply injects the powers a real Kafka's relays have, lost produce
// responses and producer crashes, and a managed three-node cluster's
// leader failover (failover.go).
func (c proxiedDest) Apply(ctx context.Context, p brokers.Power) error {
	switch p := p.(type) {
	case brokers.LoseProduceResponses:
		// The response of a chosen produce request is dropped and the
		// producer's connection cut when it comes back (the broker stored
		// the request):
		// the producer never learns the outcome and sends it again on a
		// new connection. With the idempotent producer the broker knows
		// the retry by its sequence number; without, it appends it again.
		c.loseProduce = &nfkafka.LoseProduce{Intent: intentOfKey, Fires: nfkafka.Fires(p.Fires), Lost: nfkafka.Lost(p.Lost)}
	case brokers.CrashProducer:
		// The chosen request goes on to the broker, which stores it; the
		// producer's client is killed when the broker's answer comes
		// back, which the filter drops, so it never reads it: a producer
		// process that died after sending. (Killed as the request
		// passed, the client's connection broke before the broker had
		// read a request pipelined behind another, which it then never
		// stored: kafka-producer-restart counted 14 resends of aborted
		// records where kfake, which reads every request, counted 25.)
		// The next publish starts a new client.
		pc := new(producerCrash)
		c.crash = pc
		c.loseProduce = &nfkafka.LoseProduce{Intent: intentOfKey, Fires: nfkafka.Fires(p.Fires), Lost: func(intents []int) {
			pc.kill()
			p.Crashed(intents)
		}}
	case brokers.JoinFailover:
		if c.k.managed == nil || len(c.k.managed.c.Nodes) < 3 {
			return fmt.Errorf("fault %s kills the node leading the variant's partitions: it needs mode: managed and brokers: 3", p.Fault)
		}
		c.k.managed.failovers.join(p.Fault)
	case brokers.StopLeader:
		if p.StepDown {
			return fmt.Errorf("fault %s: how: step-down is NATS's; on Kafka the leader's node is killed (how: kill)", p.Fault)
		}
		what, err := c.k.managed.failovers.stop(ctx, c.k, round{p.Fault, p.Intent, p.Attempt}, c.topicDest)
		if err != nil {
			return err
		}
		p.Stopped(what)
	default:
		return brokers.NoPower(p)
	}
	return nil
}

// intentOfKey reads a record key as an intent id.
func intentOfKey(key []byte) (int, bool) {
	in, err := brokers.ParseKey(string(key))
	return in, err == nil
}

// producerSeeds are the seeds of the variant's producer clients: on a
// real Kafka with a produce fault, the relays of a route of the
// producer's own, through the fault's filters (made once, for every
// client the producer starts); otherwise the run's.
func (c *topicDest) producerSeeds() []string {
	if c.loseProduce == nil || c.k.route == nil {
		return c.k.seeds
	}
	if c.produceRoute == nil {
		c.produceRoute = newRoute(&nfkafka.Filters{LoseProduce: c.loseProduce})
	}
	seeds, err := c.produceRoute.seeds(c.k.upstream)
	if err != nil {
		return c.k.seeds // the route is closing: the run is ending
	}
	return seeds
}

// retryMetadataAge is how old a producer's metadata may be before kgo
// asks again, on a real Kafka: kgo refreshes it before it retries on a new
// connection (a fault cut the last) or finds a partition's new leader (a
// failover), and its default (5 s) stalled every lost response, and every
// publish after a leader died, that long.
const retryMetadataAge = 20 * time.Millisecond
