package kafka

import (
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// leaderMoves is a destination's leader-move fault: the moves run on their
// own goroutine (kfake's When callback may not call back into the cluster),
// one at a time, and Close waits for them.
type leaderMoves struct {
	fault   *kfake.FaultHandle
	mu      sync.Mutex // one move at a time
	wg      sync.WaitGroup
	startMu sync.Mutex // orders starting a move with stop
	stopped bool
}

// start runs move on its own goroutine unless the fault was stopped.
func (m *leaderMoves) start(move func()) {
	m.startMu.Lock()
	defer m.startMu.Unlock()
	if m.stopped {
		return
	}
	m.wg.Go(func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		move()
	})
}

func (m *leaderMoves) stop() {
	m.startMu.Lock()
	m.stopped = true
	m.startMu.Unlock()
	if m.fault != nil {
		m.fault.Remove()
	}
	m.wg.Wait()
}

// moveLeaders watches the produce requests to the variant's topic (without
// faulting them) and, for each that carries an intent fires picks, moves
// the leader of every partition of the variant's topics (the output topic
// too, with a stage) to the next broker. It records where each new leader
// epoch begins, so that no client takes a move for a truncated log (see
// leaderEpochs).
func (c embeddedDest) moveLeaders(fires func(intent, attempt int) bool, moved func(intent int, moves []string)) {
	var mu sync.Mutex
	sightings := map[int]int{}
	var last kmsg.Request
	nodes := int32(len(c.k.cluster.ListenAddrs()))
	topics := []string{c.topic}
	if c.stage != nil {
		topics = append(topics, c.stage.out)
	}
	epochs := c.k.leaderEpochs()
	for _, t := range topics {
		for p := range c.partitions {
			epochs.record(t, p)
		}
	}
	c.moves.fault = c.k.cluster.Fault(kfake.Fault{
		Keys:    []kmsg.Key{kmsg.Produce},
		Topic:   c.topic,
		Count:   -1,
		Observe: true,
		When: func(req kmsg.Request) bool {
			mu.Lock()
			defer mu.Unlock()
			// kfake asks once per partition of a request: sight its
			// intents once.
			if req == last {
				return true
			}
			last = req
			for _, in := range producedIntents(req.(*kmsg.ProduceRequest)) {
				sightings[in]++
				if !fires(in, sightings[in]) {
					continue
				}
				c.moves.start(func() {
					var done []string
					for _, t := range topics {
						for p := range c.partitions {
							from := c.k.cluster.LeaderFor(t, p)
							to := (from + 1) % nodes
							if from < 0 || c.k.cluster.MoveTopicPartition(t, p, to) != nil {
								continue
							}
							epochs.record(t, p)
							done = append(done, fmt.Sprintf("%s[%d]: broker %d → %d", t, p, from, to))
						}
					}
					moved(in, done)
				})
			}
			return true
		},
	})
}

// leaderEpochs keeps, for each partition leader-move may move on the
// embedded cluster, the offset at which each of its leader epochs began,
// and answers the clients' OffsetForLeaderEpoch requests from it.
//
// A consumer that sees its partition's leader change asks the new leader
// where the epoch of the last record it consumed ended (KIP-320); an end
// below its position means the log was truncated, and the client resets
// (to the start of the partition, for dqbench's consumers and stages) and
// reads everything again. kfake finds an epoch's end from the epochs of
// the batches it stores, so right after a move, before any batch carries
// the new epoch, it answers "unknown epoch" (-1): the client takes that for
// a truncation ("lost records; the client consumed to offset 1164 epoch 4
// but was reset to offset 0 epoch 0") and duplicates the whole partition.
// A real leader records where each epoch began when it takes over, and a
// leader change truncates nothing that was committed; so does this.
type leaderEpochs struct {
	cluster *kfake.Cluster

	mu      sync.Mutex
	starts  map[topicPartition][]int64 // [e]: the offset at which epoch e began
	changed chan struct{}              // closed and replaced on every change
}

type topicPartition struct {
	topic     string
	partition int32
}

// leaderEpochs returns the cluster's epoch bookkeeping, answering
// OffsetForLeaderEpoch from the first call on.
func (k *Kafka) leaderEpochs() *leaderEpochs {
	k.epochsOnce.Do(func() {
		k.epochs = &leaderEpochs{cluster: k.cluster, starts: map[topicPartition][]int64{}, changed: make(chan struct{})}
		k.cluster.ControlKey(int16(kmsg.OffsetForLeaderEpoch), k.epochs.control)
	})
	return k.epochs
}

// record fills the partition's epochs up to its current one, each
// beginning at the end of the log now: called before the first move (the
// partition is kept from then on) and after each. Reading the end after a
// move, a record produced in between makes the old epoch look a few
// offsets longer than it was, which a client can never take for a
// truncation.
func (e *leaderEpochs) record(topic string, partition int32) {
	info := e.cluster.PartitionInfo(topic, partition)
	if info == nil {
		return
	}
	tp := topicPartition{topic, partition}
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.starts[tp]
	if s == nil {
		s = []int64{info.LogStartOffset}
	}
	for int32(len(s)) <= info.Epoch {
		s = append(s, info.HighWatermark)
	}
	e.starts[tp] = s
	close(e.changed)
	e.changed = make(chan struct{})
}

// recordWait bounds how long an answer waits for the record of a move the
// cluster has made (a client may learn of the new leader in between).
const recordWait = 2 * time.Second

// await waits until the partition's epoch is recorded, if it is tracked.
func (e *leaderEpochs) await(tp topicPartition, epoch int32) {
	limit := time.NewTimer(recordWait)
	defer limit.Stop()
	for {
		e.mu.Lock()
		s, ok := e.starts[tp]
		changed := e.changed
		e.mu.Unlock()
		if !ok || int32(len(s)) > epoch {
			return
		}
		select {
		case <-changed:
		case <-limit.C:
			return
		}
	}
}

// tracks says whether the request asks about a partition kept here.
func (e *leaderEpochs) tracks(req *kmsg.OffsetForLeaderEpochRequest) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			if _, ok := e.starts[topicPartition{rt.Topic, rp.Partition}]; ok {
				return true
			}
		}
	}
	return false
}

// control answers an OffsetForLeaderEpoch request that asks about a
// partition kept here (all of it: a request is answered whole), and leaves
// the others to kfake.
func (e *leaderEpochs) control(kreq kmsg.Request) (kmsg.Response, error, bool) {
	e.cluster.KeepControl()
	req := kreq.(*kmsg.OffsetForLeaderEpochRequest)
	if req.ReplicaID >= 0 || !e.tracks(req) {
		return nil, nil, false
	}
	node := e.cluster.CurrentNode()
	// A control function runs on the cluster's loop, which must be free
	// to answer PartitionInfo (and a move being recorded): read it asleep.
	infos := map[topicPartition]*kfake.PartitionInfo{}
	e.cluster.SleepControl(func() {
		for _, rt := range req.Topics {
			for _, rp := range rt.Partitions {
				tp := topicPartition{rt.Topic, rp.Partition}
				info := e.cluster.PartitionInfo(rt.Topic, rp.Partition)
				if info != nil {
					e.await(tp, info.Epoch)
				}
				infos[tp] = info
			}
		}
	})
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			tp := topicPartition{rt.Topic, rp.Partition}
			e.answer(&sp, tp, rp, infos[tp], node)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil, true
}

// answer says where epoch rp.LeaderEpoch ended on partition tp, as the
// leader node would: the start of the next epoch, or the end of the log for
// the current one, after kfake's own checks (leader, fencing).
func (e *leaderEpochs) answer(sp *kmsg.OffsetForLeaderEpochResponseTopicPartition, tp topicPartition, rp kmsg.OffsetForLeaderEpochRequestTopicPartition, info *kfake.PartitionInfo, node int32) {
	sp.LeaderEpoch, sp.EndOffset = -1, -1
	switch le := rp.CurrentLeaderEpoch; {
	case info == nil:
		sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
	case info.Leader != node:
		sp.ErrorCode = kerr.NotLeaderForPartition.Code
	case le != -1 && le < info.Epoch:
		sp.ErrorCode = kerr.FencedLeaderEpoch.Code
	case le != -1 && le > info.Epoch:
		sp.ErrorCode = kerr.UnknownLeaderEpoch.Code
	case rp.LeaderEpoch < 0 || rp.LeaderEpoch > info.Epoch:
		// Unknown: -1, -1.
	case rp.LeaderEpoch == info.Epoch:
		sp.LeaderEpoch, sp.EndOffset = rp.LeaderEpoch, info.HighWatermark
	default:
		sp.LeaderEpoch, sp.EndOffset = rp.LeaderEpoch, info.HighWatermark
		e.mu.Lock()
		if s := e.starts[tp]; int32(len(s)) > rp.LeaderEpoch+1 {
			sp.EndOffset = min(s[rp.LeaderEpoch+1], info.HighWatermark)
		}
		e.mu.Unlock()
	}
}
