package kafka

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

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
	if c.k.route == nil {
		// A cluster with TLS or a SASL login is reached without relays
		// (security.go): nothing sees its produce requests.
		switch p.(type) {
		case brokers.LoseProduceResponses, brokers.CrashProducer, brokers.CutProducer, brokers.SlowProducer:
			return brokers.NoPower(p)
		}
	}
	switch p := p.(type) {
	case brokers.LoseProduceResponses:
		// The response of a chosen produce request is dropped and the
		// producer's connection cut when it comes back (the broker stored
		// the request):
		// the producer never learns the outcome and sends it again on a
		// new connection. With the idempotent producer the broker knows
		// the retry by its sequence number; without, it appends it again.
		c.onResponses(p.Fires, func(intents []int, _, _ int) { p.Lost(intents) })
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
		c.onResponses(p.Fires, func(intents []int, _, _ int) {
			pc.kill()
			p.Crashed(intents)
		})
	case brokers.CutProducer:
		// connection-reset and partition on the producer's connection:
		// the chosen request's response is dropped as it comes back and
		// the connection cut (a reset), or, for a partition, everything
		// between the producer and the cluster dropped from then on for
		// For, after which its relays close every connection. kgo sends
		// the request again on a new connection, as it does after a lost
		// response: on Kafka a broken connection does not end a publish.
		c.onResponses(p.Fires, func(_ []int, intent, attempt int) {
			if p.For > 0 {
				c.produceRoute.blackhole(p.For)
			}
			p.Cut(intent, attempt)
		})
	case brokers.SlowProducer:
		// latency on the producer's connection: when a chosen request
		// passes, every piece of data between the producer and the
		// cluster, its response included, waits Latency for For.
		var seen nfkafka.Sightings
		c.produceRules = append(c.produceRules, nfkafka.Rule{Key: kmsg.Produce, When: func(r nfkafka.Request) bool {
			pr, ok := r.Body.(*kmsg.ProduceRequest)
			if !ok || pr.Acks == 0 {
				return false
			}
			for _, in := range nfkafka.Intents(pr, intentOfKey) {
				if at := seen.See(in); p.Fires(in, at) {
					c.produceRoute.slow(p.Latency, p.For)
					p.Slowed(in, at)
					break
				}
			}
			return false // the request passes as it is
		}})
	case brokers.LoseAcks:
		// ack-lost: the OffsetCommit that commits a chosen delivery is
		// dropped on its way to the broker and the connection cut
		// (consumer.loseCommit). kgo sends the commit again on a new
		// connection: on Kafka a commit lost on the wire costs a retry,
		// and a broken connection makes the broker redeliver nothing.
		c.ackLost = &ackLost{fires: p.Fires, lost: p.Lost}
	case brokers.RestartAfter:
		return c.restartAfter(p)
	case brokers.MoveLeaders:
		c.moveLeadersOnCluster(p.Fires, p.Moved)
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

// onResponses adds a fault on the producer's produce responses: when
// fires chooses a send of an intent a request carries, the response is
// lost as it comes back and lost called with the request's intents, the
// first chosen and the send it was chosen at. Of the faults that choose
// sends of one request, the first armed acts.
func (c proxiedDest) onResponses(fires func(intent, attempt int) bool, lost func(intents []int, intent, attempt int)) {
	c.produceFaults = append(c.produceFaults, produceFault{fires, lost})
}

// produceFault is one fault on a real Kafka's produce responses
// (onResponses).
type produceFault struct {
	fires func(intent, attempt int) bool
	lost  func(intents []int, intent, attempt int)
}

// loseProduce is the filter of the variant's produce faults: each request
// goes to the first fault that chooses one of its sends.
func (c *topicDest) loseProduce() *nfkafka.LoseProduce {
	if len(c.produceFaults) == 0 {
		return nil
	}
	type choice struct{ fault, attempt int }
	var mu sync.Mutex
	chosen := map[int]choice{} // intent → the fault that chose it first, and the send
	faults := c.produceFaults
	return &nfkafka.LoseProduce{
		Intent: intentOfKey,
		Fires: func(intent, attempt int) bool {
			for i, f := range faults {
				if f.fires(intent, attempt) {
					mu.Lock()
					defer mu.Unlock()
					if _, ok := chosen[intent]; !ok {
						chosen[intent] = choice{i, attempt}
					}
					return true
				}
			}
			return false
		},
		Lost: func(intents []int) {
			mu.Lock()
			first, found, ch := 0, false, choice{}
			for _, in := range intents {
				if got, ok := chosen[in]; ok && !found {
					first, found, ch = in, true, got
				}
				delete(chosen, in)
			}
			mu.Unlock()
			if found {
				faults[ch.fault].lost(intents, first, ch.attempt)
			}
		},
	}
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
	if c.produceFaults == nil && c.produceRules == nil || c.k.route == nil {
		return c.k.seeds
	}
	if c.produceRoute == nil {
		c.produceRoute = newRoute(&nfkafka.Filters{LoseProduce: c.loseProduce(), Rules: c.produceRules})
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

// seeds are the consumer instance's seeds: on a real Kafka, the relays of
// a route of its own, so that a network fault on its connections
// (Apply) hits it and no other client; on the embedded broker, the
// broker's.
func (k *consumer) seeds() ([]string, error) {
	if k.c.k.route == nil {
		return k.c.k.seeds, nil
	}
	var fs *nfkafka.Filters
	if k.c.ackLost != nil {
		fs = &nfkafka.Filters{Rules: []nfkafka.Rule{{Key: kmsg.OffsetCommit, Action: nfkafka.DropRequest, When: k.commitsLost.drop}}}
	}
	k.route = newRoute(fs)
	seeds, err := k.route.seeds(k.c.k.upstream)
	if err != nil {
		k.closeRoute()
		return nil, fmt.Errorf("kafka consumer: %w", err)
	}
	return seeds, nil
}

// closeRoute closes the instance's relays, once its client is closed.
func (k *consumer) closeRoute() {
	if k.route != nil {
		_ = k.route.Close() // nothing is left to fail: the client is gone
	}
}

var _ brokers.Powered = (*consumer)(nil)

// Apply acts on a consumer instance's connections to a real Kafka,
// through its relays: a reset, a partition, latency. The instance's
// commits are synchronous (Ack returns once the broker answered), so
// there is nothing in flight to wait for first.
//
// kgo reconnects after each: a reset ends the instance all the same (the
// consumer loop abandons it, as a process whose connection broke is
// restarted); a partitioned instance goes on, its commit waits through the
// partition and is sent again on a new connection once the relay closed
// the old ones, which Kafka takes while the instance is still a member of
// the group (the partition is shorter than the session timeout).
func (k *consumer) Apply(_ context.Context, p brokers.Power) error {
	if k.route == nil {
		return brokers.NoPower(p)
	}
	switch p := p.(type) {
	case brokers.ResetConnection:
		k.route.reset()
	case brokers.Partition:
		k.route.blackhole(p.For)
	case brokers.Slow:
		k.route.slow(p.Latency, p.For)
	default:
		return brokers.NoPower(p)
	}
	return nil
}

// ackLost is ack-lost on a real Kafka: which deliveries' commits to lose,
// and what to record when one was.
type ackLost struct {
	fires func(intent, attempt int) bool
	lost  func(intent, attempt int)
}

// lostCommits are the commits of one consumer instance to drop, by the
// offset each commits, with the deliveries whose acks each carries.
type lostCommits struct {
	mu sync.Mutex
	at map[commitAt][]lostAck
	// lost records a lost ack.
	lost func(intent, attempt int)
}

// commitAt is a partition's offset as a commit carries it. Not by topic:
// OffsetCommit v10 names topics by id, and an instance commits one topic.
type commitAt struct {
	partition int32
	offset    int64
}

// lostAck is a delivery whose ack a dropped commit carried.
type lostAck struct{ intent, attempt int }

// loseCommit marks the commit of ds for losing when ack-lost chooses any of
// them: the commit carries, for each partition, the offset after the last
// of ds on it.
func (k *consumer) loseCommit(ds ...brokers.Delivery) {
	al := k.c.ackLost
	if al == nil || k.route == nil {
		return
	}
	var chosen []lostAck
	for _, d := range ds {
		if al.fires(d.Intent, d.Attempt) {
			chosen = append(chosen, lostAck{d.Intent, d.Attempt})
		}
	}
	if len(chosen) == 0 {
		return
	}
	l := &k.commitsLost
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.at == nil {
		l.at, l.lost = map[commitAt][]lostAck{}, al.lost
	}
	last := map[commitAt]int64{} // a partition (offset 0) → its commit
	for _, d := range ds {
		r := d.Handle.(*kgo.Record)
		p := commitAt{partition: r.Partition}
		last[p] = max(last[p], r.Offset+1)
	}
	first := true
	for p, offset := range last {
		p.offset = offset
		if first {
			l.at[p], first = chosen, false // recorded once, with one partition
		} else if _, ok := l.at[p]; !ok {
			l.at[p] = nil
		}
	}
}

// drop is the rule that picks the commits marked, each once: an
// OffsetCommit request that carries a marked offset is dropped, and the
// acks it carried recorded lost.
func (l *lostCommits) drop(r nfkafka.Request) bool {
	req, ok := r.Body.(*kmsg.OffsetCommitRequest)
	if !ok {
		return false
	}
	l.mu.Lock()
	hit := false
	var lost []lostAck
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			at := commitAt{p.Partition, p.Offset}
			if acks, ok := l.at[at]; ok {
				delete(l.at, at)
				hit, lost = true, append(lost, acks...)
			}
		}
	}
	record := l.lost
	l.mu.Unlock()
	for _, a := range lost {
		record(a.intent, a.attempt)
	}
	return hit
}
