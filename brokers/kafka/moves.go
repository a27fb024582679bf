package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	nfkafka "github.com/dqbench/dqbench/netfault/kafka"
)

// moveWait bounds one leader move on a real Kafka: a reassignment and an
// election, each a round trip to the controller.
const moveWait = 30 * time.Second

// moveLeadersOnCluster is leader-move on a real Kafka: the producer's
// relays watch its produce requests, and for each that carries an intent
// fires picks, every partition of the variant's topics hands its
// leadership to the next of its in-sync replicas, through the admin API as
// an operator would (kafka-reassign-partitions and kafka-leader-election):
// the partition's replicas are reordered, the new leader first (the same
// replicas: nothing is copied), and the preferred leader elected. Moves
// run one at a time on their own goroutine (leaderMoves), not in the
// relay, which would hold the producer's connection meanwhile.
func (c proxiedDest) moveLeadersOnCluster(fires func(intent, attempt int) bool, moved func(intent int, moves []string)) {
	var seen nfkafka.Sightings
	c.produceRules = append(c.produceRules, nfkafka.Rule{Key: kmsg.Produce, When: func(r nfkafka.Request) bool {
		pr, ok := r.Body.(*kmsg.ProduceRequest)
		if !ok {
			return false
		}
		for _, in := range nfkafka.Intents(pr, intentOfKey) {
			if at := seen.See(in); fires(in, at) {
				c.moves.start(func() {
					ctx, cancel := context.WithTimeout(context.Background(), moveWait)
					defer cancel()
					done, err := c.moveOnce(ctx)
					if err != nil {
						done = append(done, "move failed: "+err.Error())
					}
					moved(in, done)
				})
			}
		}
		return false // the request passes as it is
	}})
}

// moveOnce moves the leader of every partition of the variant's topics to
// the next in-sync replica and returns one line per move ("dqbench-x[0]:
// broker 1 → 2"). A partition with no other in-sync replica stays.
func (c proxiedDest) moveOnce(ctx context.Context) ([]string, error) {
	topics := []string{c.topic}
	if c.stage != nil {
		topics = append(topics, c.stage.out)
	}
	var req kadm.AlterPartitionAssignmentsReq
	set := kadm.TopicsSet{}
	var lines []string
	for _, t := range topics {
		ps, err := c.k.freshPartitions(ctx, t)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			order, ok := nextLeader(p.Leader, p.Replicas, p.ISR)
			if !ok {
				continue
			}
			req.Assign(t, p.Partition, order)
			set.Add(t, p.Partition)
			lines = append(lines, fmt.Sprintf("%s[%d]: broker %d → %d", t, p.Partition, p.Leader, order[0]))
		}
	}
	if len(lines) == 0 {
		return nil, errors.New("no partition has another in-sync replica to lead it (a topic with one replica: leader-move needs a cluster whose topics are replicated)")
	}
	assigned, err := c.k.adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := assigned.Error(); err != nil {
		return nil, fmt.Errorf("reorder the replicas: %w", err)
	}
	elected, err := c.k.adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, set)
	if err != nil {
		return nil, err
	}
	for _, ps := range elected {
		for _, r := range ps {
			if r.Err != nil && !errors.Is(r.Err, kerr.ElectionNotNeeded) {
				return nil, fmt.Errorf("elect %s[%d]'s leader: %w", r.Topic, r.Partition, r.Err)
			}
		}
	}
	return lines, nil
}

// nextLeader orders replicas with the in-sync replica after leader (in the
// replicas' order, wrapping) first, the others as they were; false when
// no other replica is in sync.
func nextLeader(leader int32, replicas, isr []int32) ([]int32, bool) {
	at := slices.Index(replicas, leader)
	for i := 1; i < len(replicas); i++ {
		next := replicas[(at+i+len(replicas))%len(replicas)]
		if next == leader || !slices.Contains(isr, next) {
			continue
		}
		order := []int32{next}
		for _, r := range replicas {
			if r != next {
				order = append(order, r)
			}
		}
		return order, true
	}
	return nil, false
}
