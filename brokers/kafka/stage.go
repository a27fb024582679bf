package kafka

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dqbench/dqbench/brokers"
)

// A staged destination has two topics: the producer writes to the input
// topic (topicDest.topic), a consume-transform-produce stage reads it in
// its own consumer group and writes each record to the output topic, and
// the consumers read the output topic. The stage is franz-go's: with
// transactions, a kgo.GroupTransactSession per instance (output records
// and input offsets in one transaction); without, a plain group consumer
// that writes, flushes, then commits.

var _ brokers.Stager = (*topicDest)(nil)

// stageState is a staged destination's output topic, and what the stage
// wrote to it, so that Backlog can count the output records no consumer
// has committed yet: a transaction's commit markers take offsets too, so
// end offsets minus committed offsets would never reach 0.
type stageState struct {
	spec          brokers.StageSpec
	out           string // the output topic
	group         string // the stage's consumer group on the input topic
	readCommitted bool   // the consumers skip aborted records

	fault *kfake.FaultHandle // produce-response-lost on the output topic

	mu      sync.Mutex
	pending int                  // records forwarded without an outcome yet
	written map[int32][]outputAt // per output partition, by offset
}

// outputAt is one record the stage wrote; txn is its transaction (nil
// without transactions).
type outputAt struct {
	offset int64
	txn    *txnMark
}

// txnMark is shared by the records of one transaction.
type txnMark struct{ aborted bool }

// newStage prepares the output topic's bookkeeping for topic.
func newStage(spec brokers.StageSpec, topic string, readCommitted bool) *stageState {
	return &stageState{spec: spec, out: topic + "-out", group: topic + "-stage", readCommitted: readCommitted, written: map[int32][]outputAt{}}
}

// Stage starts a stage instance.
func (c *topicDest) Stage(ctx context.Context, slot, gen int) (brokers.Stage, error) {
	st := c.stage
	if st == nil {
		return nil, errors.New("this destination has no stage")
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.k.seeds...),
		kgo.ConsumerGroup(st.group),
		kgo.HeartbeatInterval(groupHeartbeat),
		kgo.SessionTimeout(c.k.sessionTimeout()),
		kgo.ConsumeTopics(c.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(50 * time.Millisecond),
		kgo.DefaultProduceTopic(st.out),
		kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RetryBackoffFn(func(int) time.Duration { return 2 * time.Millisecond }),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
		kgo.ClientID(fmt.Sprintf("%s-stage-%d", c.topic, gen)),
		// Leaders move (leader-move): find the new one quickly.
		kgo.MetadataMinAge(50 * time.Millisecond),
		kgo.DisableClientMetrics(), // as the consumer's
	}
	s := &stage{d: c}
	if st.spec.Transactional {
		opts = append(opts,
			// One transactional id per slot: a replacement's
			// InitProducerID fences the instance it replaces and aborts
			// its open transaction at once, instead of after a timeout.
			kgo.TransactionalID(fmt.Sprintf("%s-stage-%d", c.topic, slot)),
			kgo.TransactionTimeout(10*time.Second),
		)
		sess, err := kgo.NewGroupTransactSession(opts...)
		if err != nil {
			return nil, fmt.Errorf("kafka stage: %w", err)
		}
		s.sess, s.cl = sess, sess.Client()
		return s, nil
	}
	cl, err := kgo.NewClient(append(append(opts, c.k.sec...), kgo.DisableAutoCommit())...)
	if err != nil {
		return nil, fmt.Errorf("kafka stage: %w", err)
	}
	s.cl = cl
	return s, nil
}

// stage is one stage instance.
type stage struct {
	d    *topicDest
	cl   *kgo.Client
	sess *kgo.GroupTransactSession // nil without transactions
	txn  *txnMark                  // the open transaction, if any
}

var _ brokers.Stage = (*stage)(nil)

func (s *stage) poll(ctx context.Context) kgo.Fetches {
	if s.sess != nil {
		return s.sess.PollRecords(ctx, 1)
	}
	return s.cl.PollRecords(ctx, 1)
}

// Next polls one record at a time, so that a commit covers exactly the
// records the pipeline has taken (kgo commits the offsets of everything
// polled).
func (s *stage) Next(ctx context.Context) (brokers.Delivery, error) {
	for {
		fs := s.poll(ctx)
		// A polled record is returned even when ctx ended meanwhile: kgo
		// counts it consumed, so the next commit covers it.
		for _, r := range fs.Records() {
			intent, err := brokers.ParseKey(string(r.Key))
			if err != nil {
				return brokers.Delivery{}, fmt.Errorf("record %s[%d]@%d: %w", r.Topic, r.Partition, r.Offset, err)
			}
			return brokers.Delivery{Intent: intent, Body: r.Value, Position: fmt.Sprintf("%d@%d", r.Partition, r.Offset), Handle: r}, nil
		}
		if err := ctx.Err(); err != nil {
			return brokers.Delivery{}, err
		}
		if fs.IsClientClosed() {
			return brokers.Delivery{}, errors.New("kafka stage closed")
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			ferr = fmt.Errorf("fetch %s[%d]: %w", t, p, err)
		})
		if ferr != nil {
			return brokers.Delivery{}, ferr
		}
	}
}

func (s *stage) Begin() error {
	if s.sess == nil {
		return nil
	}
	if err := s.sess.Begin(); err != nil {
		return err
	}
	s.txn = &txnMark{}
	return nil
}

func (s *stage) Forward(ctx context.Context, d brokers.Delivery, body []byte, done func(string, error)) {
	st := s.d.stage
	in := d.Handle.(*kgo.Record)
	st.mu.Lock()
	st.pending++
	st.mu.Unlock()
	txn := s.txn
	r := &kgo.Record{Key: in.Key, Value: body, Headers: []kgo.RecordHeader{{Key: "dqbench-input", Value: []byte(d.Position)}}}
	s.cl.Produce(ctx, r, func(r *kgo.Record, err error) {
		st.mu.Lock()
		st.pending--
		if err == nil {
			st.add(r.Partition, outputAt{offset: r.Offset, txn: txn})
		}
		st.mu.Unlock()
		if err != nil {
			done("", err)
			return
		}
		done(fmt.Sprintf("%d@%d", r.Partition, r.Offset), nil)
	})
}

// add keeps a partition's records in offset order; st.mu is held.
func (st *stageState) add(p int32, o outputAt) {
	ws := st.written[p]
	i := len(ws)
	for i > 0 && ws[i-1].offset > o.offset {
		i--
	}
	st.written[p] = slices.Insert(ws, i, o)
}

func (s *stage) Flush(ctx context.Context) error { return s.cl.Flush(ctx) }

func (s *stage) Commit(ctx context.Context) (bool, error) {
	if s.sess == nil {
		return true, s.cl.CommitUncommittedOffsets(ctx)
	}
	committed, err := s.sess.End(ctx, kgo.TryCommit)
	if !committed {
		s.aborted()
	}
	s.txn = nil
	return committed, err
}

func (s *stage) Abort(ctx context.Context) error {
	if s.sess == nil {
		return errors.New("a stage without transactions cannot abort")
	}
	_, err := s.sess.End(ctx, kgo.TryAbort)
	s.aborted()
	return err
}

// aborted marks the open transaction's records aborted.
func (s *stage) aborted() {
	if s.txn == nil {
		return
	}
	st := s.d.stage
	st.mu.Lock()
	s.txn.aborted = true
	st.mu.Unlock()
	s.txn = nil
}

// Abandon leaves the group and closes without committing; an open
// transaction is aborted when the slot's replacement fences it (or when
// it times out).
func (s *stage) Abandon() {
	s.aborted()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.cl.LeaveGroupContext(ctx)
	s.cl.Close()
}

func (s *stage) Close(ctx context.Context) {
	if s.sess != nil && s.txn != nil {
		_, _ = s.sess.End(ctx, kgo.TryAbort)
	}
	s.aborted()
	_ = s.cl.LeaveGroupContext(ctx)
	s.cl.Close()
}

// stageBacklog counts the input records the stage has not committed and
// the output records the consumers have not: those of aborted
// transactions only where the consumers read uncommitted records.
func (c *topicDest) stageBacklog(ctx context.Context) (int64, error) {
	st := c.stage
	in, err := c.lag(ctx, c.topic, st.group)
	if err != nil {
		return 0, err
	}
	committed, err := c.k.adm.FetchOffsets(ctx, c.group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		committed, err = nil, nil
	}
	if err != nil {
		return 0, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	n := int64(st.pending)
	for p, ws := range st.written {
		at := int64(0)
		if got, ok := committed.Lookup(st.out, p); ok && got.Err == nil && got.At > 0 {
			at = got.At
		}
		i, _ := slices.BinarySearchFunc(ws, at, func(o outputAt, at int64) int { return cmp.Compare(o.offset, at) })
		for _, o := range ws[i:] {
			if o.txn == nil || !o.txn.aborted || !st.readCommitted {
				n++
			}
		}
	}
	return in + n, nil
}
