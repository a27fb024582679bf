package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/dqbench/dqbench/brokers"
)

// On a managed three-node cluster every variant's partitions are led by
// one node (createTopic puts it first in every replica list: the
// preferred leader), so that a leader-failover, which SIGKILLs that node,
// meets every variant the same way. The node is not the active controller
// when the cluster starts, so the quorum keeps its leader.

// meetWait bounds how long a destination that reached a failover waits
// for the others that joined it.
const meetWait = 20 * time.Second

// restartWait bounds a restart of a killed node.
const restartWait = 90 * time.Second

// failovers kills the partitions' leader for the destinations of one run:
// each failover (a fault, an intent, an attempt) happens once, when every
// destination that joined the fault has reached it. The killed node stays
// down for the rest of the run's traffic (the survivors hold every
// partition, min.insync.replicas 2 of 3); it is started again, and made
// the preferred leader again, before the next failover and when the run
// ends on a standing cluster.
type failovers struct {
	opening, opened atomic.Int64 // destinations being opened, opened

	mu     sync.Mutex
	joined map[string]int
	rounds map[round]*meeting
	killed []int // nodes killed and not restarted yet
}

type round struct {
	fault           string
	intent, attempt int
}

// meeting is one failover: who reached it and what was done.
type meeting struct {
	dests []*topicDest
	done  chan struct{}
	what  string // the node killed and what it led
	err   error
}

func (f *failovers) join(fault string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.joined == nil {
		f.joined, f.rounds = map[string]int{}, map[round]*meeting{}
	}
	f.joined[fault]++
}

// stop meets the other destinations at round r and kills the leader once
// for all of them (the first to arrive does it).
func (f *failovers) stop(ctx context.Context, k *Kafka, r round, d *topicDest) (string, error) {
	return f.once(ctx, r, d, func(first *topicDest) (string, error) { return f.kill(ctx, k, first) })
}

// once meets the other destinations at round r and acts once for all of
// them: the first to arrive waits for the others, then acts (on the
// destination that arrived first).
func (f *failovers) once(ctx context.Context, r round, d *topicDest, act func(first *topicDest) (string, error)) (string, error) {
	f.mu.Lock()
	mt, ok := f.rounds[r]
	first := !ok
	if first {
		mt = &meeting{done: make(chan struct{})}
		f.rounds[r] = mt
	}
	mt.dests = append(mt.dests, d)
	f.mu.Unlock()
	if first {
		f.meet(ctx, r, mt)
		mt.what, mt.err = act(mt.dests[0])
		close(mt.done)
	} else {
		select {
		case <-mt.done:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return mt.what, mt.err
}

// meet waits (at most meetWait) until every destination that joined the
// fault reached round r and none is still being opened.
func (f *failovers) meet(ctx context.Context, r round, mt *meeting) {
	deadline := time.Now().Add(meetWait)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		f.mu.Lock()
		joined := f.joined[r.fault]
		all := len(mt.dests) >= joined && int64(joined) >= f.opened.Load()
		f.mu.Unlock()
		if all && f.opening.Load() == 0 {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// kill SIGKILLs the node leading d's first partition, after starting the
// one an earlier failover killed.
func (f *failovers) kill(ctx context.Context, k *Kafka, d *topicDest) (string, error) {
	if err := f.restart(ctx, k); err != nil {
		return "", fmt.Errorf("leader failover: %w", err)
	}
	leader, err := k.leaderOf(ctx, d.topic)
	if err != nil {
		return "", fmt.Errorf("leader failover: %w", err)
	}
	c := k.managed.c
	i := c.Index(leader)
	if i < 0 {
		return "", fmt.Errorf("leader failover: topic %s is led by node %d, not a node of the managed cluster", d.topic, leader)
	}
	pid, err := c.Kill(i)
	if err != nil {
		return "", fmt.Errorf("leader failover: kill Kafka node %s: %w", c.Nodes[i].Name, err)
	}
	f.mu.Lock()
	f.killed = append(f.killed, i)
	f.mu.Unlock()
	return fmt.Sprintf("killed Kafka node %s (node.id %d, pid %d) with SIGKILL, the leader of every partition of topic %s; the survivors fence it and elect new leaders from the in-sync replicas, clients find them through metadata; the node restarts before the next failover",
		c.Nodes[i].Name, leader, pid, d.topic), nil
}

// restart starts the killed nodes again, waits until the cluster is
// ready, and makes the lead node every partition's leader again.
func (f *failovers) restart(ctx context.Context, k *Kafka) error {
	f.mu.Lock()
	killed := f.killed
	f.killed = nil
	f.mu.Unlock()
	if len(killed) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, restartWait)
	defer cancel()
	c := k.managed.c
	for _, i := range killed {
		if err := c.Restart(ctx, i); err != nil {
			return fmt.Errorf("restart Kafka node %s: %w", c.Nodes[i].Name, err)
		}
	}
	return k.preferLeaders(ctx)
}

// close restarts the killed nodes when restart (a standing cluster, kept
// at 3 nodes for the next run).
func (f *failovers) close(k *Kafka, restart bool) error {
	if !restart {
		return nil
	}
	if err := f.restart(context.Background(), k); err != nil {
		return fmt.Errorf("%w: a Kafka node killed by a leader failover did not start again: %v", brokers.ErrCleanup, err)
	}
	return nil
}

// leaderOf asks the cluster (fresh metadata) which node leads partition 0
// of topic.
func (k *Kafka) leaderOf(ctx context.Context, topic string) (int32, error) {
	ps, err := k.freshPartitions(ctx, topic)
	if err != nil {
		return 0, err
	}
	for _, p := range ps {
		if p.Partition == 0 && p.Leader >= 0 {
			return p.Leader, nil
		}
	}
	return 0, fmt.Errorf("topic %s has no leader for partition 0", topic)
}

// freshPartitions asks the cluster for topic's partitions (leader,
// replicas, in-sync replicas), in partition order. Not kadm's Metadata,
// which answers from the client's cache when it is younger than
// MetadataMinAge (5 s): a leader moved a moment ago was not seen.
func (k *Kafka) freshPartitions(ctx context.Context, topic string) ([]kmsg.MetadataResponseTopicPartition, error) {
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, k.admin)
	if err != nil {
		return nil, fmt.Errorf("metadata of topic %s: %w", topic, err)
	}
	for _, mt := range resp.Topics {
		if mt.Topic == nil || *mt.Topic != topic {
			continue
		}
		if err := kerr.ErrorForCode(mt.ErrorCode); err != nil {
			return nil, fmt.Errorf("metadata of topic %s: %w", topic, err)
		}
		ps := slices.Clone(mt.Partitions)
		slices.SortFunc(ps, func(a, b kmsg.MetadataResponseTopicPartition) int { return int(a.Partition - b.Partition) })
		return ps, nil
	}
	return nil, fmt.Errorf("metadata of topic %s: not in the answer", topic)
}

// preferLeaders runs a preferred leader election for every topic of the
// run, so the lead node (first in every replica list) leads again.
func (k *Kafka) preferLeaders(ctx context.Context) error {
	for {
		_, err := k.adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, nil)
		if err == nil || errors.Is(err, kerr.ElectionNotNeeded) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("preferred leader election: %w", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// chooseLead picks the node to lead every partition on a three-node
// managed cluster: the first that is not the active controller.
func (k *Kafka) chooseLead(ctx context.Context) (int32, error) {
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, k.admin)
	if err != nil {
		return 0, err
	}
	for _, n := range k.managed.c.Nodes {
		if n.ID != resp.ControllerID {
			return n.ID, nil
		}
	}
	return k.managed.c.Nodes[0].ID, nil
}

// createTopic creates topic with partitions: on a three-node managed
// cluster with the lead node first in every replica list (so it leads),
// elsewhere as the cluster's defaults say.
func (k *Kafka) createTopic(ctx context.Context, partitions int32, topic string) error {
	if k.managed == nil || len(k.managed.c.Nodes) < 3 {
		resp, err := k.adm.CreateTopic(ctx, partitions, k.replicas(), nil, topic)
		if err == nil {
			err = resp.Err
		}
		return err
	}
	replicas := []int32{k.managed.lead}
	for _, n := range k.managed.c.Nodes {
		if n.ID != k.managed.lead {
			replicas = append(replicas, n.ID)
		}
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30_000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = topic, -1, -1
	for p := range partitions {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = p, replicas
		t.ReplicaAssignment = append(t.ReplicaAssignment, a)
	}
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, k.admin)
	if err != nil {
		return err
	}
	for _, rt := range resp.Topics {
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
			return err
		}
	}
	return nil
}

// waitHosted waits until every partition of topic has a leader that hosts
// it: a real Kafka answers CreateTopics before the leaders have loaded
// their partitions, and a produce in between is refused with
// UNKNOWN_TOPIC_OR_PARTITION, which dqbench's producer (kgo's retries
// off) would give up on. It asks each leader for the partitions' end
// offsets, the same leader a produce goes to; at most 30 s.
func (k *Kafka) waitHosted(ctx context.Context, topic string, partitions int32) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		err := k.hosted(ctx, topic, partitions)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s was created, but its partitions are not all led yet: %w", topic, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// hosted says why not every partition of topic is led by a node that
// answers for it, nil when each is.
func (k *Kafka) hosted(ctx context.Context, topic string, partitions int32) error {
	ps, err := k.freshPartitions(ctx, topic)
	if err != nil {
		return err
	}
	if int32(len(ps)) < partitions {
		return fmt.Errorf("%d of %d partitions in the metadata", len(ps), partitions)
	}
	byLeader := map[int32][]int32{}
	for _, p := range ps {
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil || p.Leader < 0 {
			return fmt.Errorf("partition %d: leader %d: %v", p.Partition, p.Leader, err)
		}
		byLeader[p.Leader] = append(byLeader[p.Leader], p.Partition)
	}
	for leader, parts := range byLeader {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		t := kmsg.NewListOffsetsRequestTopic()
		t.Topic = topic
		for _, p := range parts {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp = p, -1 // the end offset
			t.Partitions = append(t.Partitions, rp)
		}
		req.Topics = append(req.Topics, t)
		resp, err := req.RequestWith(ctx, k.admin.Broker(int(leader)))
		if err != nil {
			return fmt.Errorf("node %d: %w", leader, err)
		}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					return fmt.Errorf("partition %d on node %d: %w", rp.Partition, leader, err)
				}
			}
		}
	}
	return nil
}
