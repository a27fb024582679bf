package kafka

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
)

// autoCommit is a consumer's auto-commit (consumer commit: auto): kgo's
// default one, not dqbench's. At the start of each PollRecords, kgo makes
// the offsets after the records the previous polls returned committable;
// every AutoCommitInterval it commits them, whatever the application did
// with those records. A synchronous application (every record of a poll
// processed before the next poll) has processed all of them; one that
// hands a poll to a worker and polls again has not.
//
// The consumer's own OnPartitionsRevoked (consumer.revoked) replaces
// kgo's default revoke, which commits the same offsets (commitHead) on
// every revoke: the consumer's does on a rebalance, not on a crash
// (Abandon's leave), as a process that dies commits nothing; what was not
// committed by then is fetched again by the next owner.
type autoCommit struct {
	on bool
	mu sync.Mutex
	// report is the recording's: it records an ack for each delivery a
	// commit covered.
	report func([]brokers.Delivery)
	// pending are the deliveries handed to the application and not yet
	// covered by a commit, by partition, in offset order.
	pending map[int32][]brokers.Delivery
	// head and latest follow kgo's uncommitted offsets: latest is after
	// the last record each partition's polls returned, head what it was
	// at the start of the latest poll (what kgo's auto-commit commits).
	head, latest map[int32]int64
}

var _ brokers.AutoCommitter = (*consumer)(nil)

// AutoCommits installs committed as the report of each commit, when the
// client auto-commits.
func (k *consumer) AutoCommits(committed func([]brokers.Delivery)) bool {
	if !k.auto.on {
		return false
	}
	k.auto.mu.Lock()
	k.auto.report = committed
	k.auto.mu.Unlock()
	return true
}

// commitOpts are the consumer's commit options: kgo's auto-commit with
// the scenario's interval, or none (dqbench commits in Ack).
func (k *consumer) commitOpts() []kgo.Opt {
	s := k.c.settings.KafkaConsumer
	if !s.AutoCommits() {
		return []kgo.Opt{kgo.DisableAutoCommit()}
	}
	k.auto.on = true
	k.auto.pending = map[int32][]brokers.Delivery{}
	k.auto.head, k.auto.latest = map[int32]int64{}, map[int32]int64{}
	interval := s.AutoCommitInterval
	if interval <= 0 {
		interval = catalog.DefaultAutoCommitInterval
	}
	return []kgo.Opt{
		kgo.AutoCommitInterval(interval.D()),
		kgo.AutoCommitCallback(k.auto.committed),
	}
}

// handed notes a delivery handed to the application.
func (a *autoCommit) handed(d brokers.Delivery, r *kgo.Record) {
	if !a.on {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pending[r.Partition] = append(a.pending[r.Partition], d)
}

// committed is kgo's callback after each auto-commit: it reports the
// deliveries below each offset the broker took.
func (a *autoCommit) committed(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
	if err != nil || req == nil || resp == nil {
		return
	}
	took := map[int32]bool{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			took[p.Partition] = kerr.ErrorForCode(p.ErrorCode) == nil
		}
	}
	var covered []brokers.Delivery
	a.mu.Lock()
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if !took[p.Partition] {
				continue
			}
			ds := a.pending[p.Partition]
			n := 0
			for n < len(ds) && ds[n].Handle.(*kgo.Record).Offset < p.Offset {
				n++
			}
			covered = append(covered, ds[:n]...)
			a.pending[p.Partition] = ds[n:]
		}
	}
	report := a.report
	a.mu.Unlock()
	if report != nil && len(covered) > 0 {
		report(covered)
	}
}

// polling promotes what the polls so far returned to committable, as kgo
// does at the start of each poll.
func (a *autoCommit) polling() {
	if !a.on {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for p, o := range a.latest {
		a.head[p] = o
	}
}

// polled notes what a poll returned, all of it (kgo's dirty offsets).
func (a *autoCommit) polled(fs kgo.Fetches) {
	if !a.on {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		if n := len(p.Records); n > 0 {
			a.latest[p.Partition] = p.Records[n-1].Offset + 1
		}
	})
}

// commitHead commits, on a rebalance that moves partitions away, their
// committable offsets, as kgo's default revoke does; not when the
// consumer is gone (a crash commits nothing).
func (k *consumer) commitHead(ctx context.Context, moving map[int32]bool) {
	if !k.auto.on {
		return
	}
	k.mu.Lock()
	gone := k.gone
	k.mu.Unlock()
	k.auto.mu.Lock()
	offsets := map[int32]kgo.EpochOffset{}
	for p := range moving {
		if o, ok := k.auto.head[p]; ok {
			offsets[p] = kgo.EpochOffset{Epoch: -1, Offset: o}
		}
		delete(k.auto.head, p)
		delete(k.auto.latest, p)
	}
	k.auto.mu.Unlock()
	if gone || len(offsets) == 0 {
		return
	}
	topic := k.c.topic
	if k.c.stage != nil {
		topic = k.c.stage.out
	}
	k.cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{topic: offsets}, k.auto.committed)
}
