package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
)

func (c *topicDest) Producer(ctx context.Context) (brokers.Producer, error) {
	if c.settings.Client == catalog.KafkaGo {
		return c.kafkaGoProducer()
	}
	p := &producer{opts: c.producerOpts(), noAck: c.spec.Acks == catalog.AcksNone, crash: c.crash, confirmed: c.confirmed}
	if id := c.settings.TransactionalID; id != "" {
		// Namespaced by the variant's topic, so variants with the same
		// transactional_id do not fence each other.
		p.opts = append(p.opts, kgo.TransactionalID(id+"."+c.topic))
		p.txq = make(chan pending, max(c.spec.Window, 1))
		c.ends = new(txnEnds)
		p.ends = c.ends
		p.txDone = make(chan struct{})
	}
	if _, err := p.current(); err != nil {
		return nil, err
	}
	if p.txq != nil {
		go p.transact(ctx)
	}
	return p, nil
}

// producerOpts are the options of the variant's franz-go producer clients.
func (c *topicDest) producerOpts() []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.producerSeeds()...),
		kgo.DefaultProduceTopic(c.topic),
		kgo.MaxBufferedRecords(c.spec.Window),
		kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		// A lost response is retried after this backoff; keep it short so
		// fault-heavy runs stay fast.
		kgo.RetryBackoffFn(func(int) time.Duration { return 2 * time.Millisecond }),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
		kgo.DisableClientMetrics(), // as the consumer's
	}
	opts = append(opts, c.k.sec...)
	if c.k.route != nil {
		opts = append(opts, kgo.MetadataMinAge(retryMetadataAge))
	}
	switch c.spec.Acks {
	case catalog.AcksLeader:
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()))
	case catalog.AcksNone:
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()))
	default:
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	}
	if !c.spec.Idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
		if c.spec.Retries > 0 {
			// The application retries: a request that fails comes back
			// to it as an unknown outcome, and it publishes a new record.
			// (An idempotent client cannot give up on a batch it is
			// unsure of, so there the application sees only confirms.)
			opts = append(opts, kgo.RecordRetries(0))
		}
	}
	return opts
}

// producer is the variant's franz-go producer: one client at a time. A
// producer-crash kills the client (its generation); the next publish
// starts a new one, as a restarted producer process would. With a
// transactional id, publishes go out in transactions (transact).
type producer struct {
	opts  []kgo.Opt
	noAck bool           // acks=0: kgo reports success once the request is written
	crash *producerCrash // nil without a producer-crash fault

	mu      sync.Mutex
	gen     *generation
	closing sync.WaitGroup // killed clients still closing

	// confirmed is told of each publish the broker confirmed, or, with
	// acks none, that the client sent (the destination's broker-restart).
	confirmed func(intent int)

	txq    chan pending // nil unless transactional
	txDone chan struct{}
	ends   *txnEnds // where the committed records end (Backlog)
	// sendMu: Close takes it to close txq, so that no publish sends on
	// it afterwards (closed).
	sendMu sync.RWMutex
	closed bool
}

var _ brokers.Producer = (*producer)(nil)

// generation is one producer client; dead once a producer-crash killed
// it, after which its connections neither read nor write.
type generation struct {
	cl   *kgo.Client
	dead atomic.Bool
}

// errDead is what a killed client's connections answer.
var errDead = errors.New("producer client killed by dqbench (producer-crash)")

// current returns the live client, starting a new one after a crash.
func (p *producer) current() (*generation, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gen != nil && !p.gen.dead.Load() {
		return p.gen, nil
	}
	g := new(generation)
	opts := p.opts
	if p.crash != nil {
		d := net.Dialer{Timeout: 3 * time.Second}
		opts = append(opts[:len(opts):len(opts)], kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
			if g.dead.Load() {
				return nil, errDead
			}
			conn, err := d.DialContext(ctx, network, host)
			if err != nil {
				return nil, err
			}
			return &genConn{Conn: conn, g: g}, nil
		}))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka producer: %w", err)
	}
	g.cl = cl
	p.gen = g
	if p.crash != nil {
		p.crash.serve(p, g)
	}
	return g, nil
}

// kill kills g: from now on its connections fail (what the broker sends
// it is never read), and it closes in the background, failing every
// publish it had not had confirmed.
func (p *producer) kill(g *generation) {
	if g.dead.Swap(true) {
		return
	}
	p.closing.Go(g.cl.Close)
}

// outcome is a publish's result as the application sees it: any end of a
// publish on a killed client is the crash's.
func (p *producer) outcome(g *generation, err error) error {
	if err != nil && g.dead.Load() {
		return fmt.Errorf("%w: %v", brokers.ErrProducerCrashed, err)
	}
	if err == nil && p.noAck {
		return brokers.ErrUnconfirmed
	}
	return refused(err)
}

// genConn is a connection of a client that may be killed: once it is, a
// read returns an error whatever arrived, so a response the broker wrote
// after the kill is never seen.
type genConn struct {
	net.Conn
	g *generation
}

func (c *genConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if c.g.dead.Load() {
		c.Conn.Close()
		return 0, errDead
	}
	return n, err
}

func (c *genConn) Write(b []byte) (int, error) {
	if c.g.dead.Load() {
		c.Conn.Close()
		return 0, errDead
	}
	return c.Conn.Write(b)
}

func (p *producer) Publish(ctx context.Context, m brokers.Message, done func(error)) {
	if p.txq != nil {
		p.sendMu.RLock()
		defer p.sendMu.RUnlock()
		if p.closed {
			done(errClosed)
			return
		}
		p.txq <- pending{ctx: ctx, m: m, done: done}
		return
	}
	g, err := p.current()
	if err != nil {
		done(err)
		return
	}
	g.cl.Produce(ctx, record(m), func(_ *kgo.Record, err error) {
		if err == nil { // confirmed, or with acks none sent
			p.confirmed(m.Intent)
		}
		if errors.Is(err, kgo.ErrRecordRetries) && !g.dead.Load() {
			relearnLeaders(g.cl)
		}
		done(p.outcome(g, err))
	})
}

// relearnLeaders has a client that gave a record back, out of retries
// (the application retries: RecordRetries 0), ask for the partitions'
// leaders before the application publishes again. kgo looks them up
// again when it retries a batch itself, not when it fails one: after a
// leader died, every publish went on dialing it (refused) and failing at
// once, until kgo's periodic refresh (5 minutes); the acks-all variant of
// kafka-leader-failover lost all it published after the kill. (franz-go
// #937 fixed this for NOT_LEADER_OR_FOLLOWER; a failed dial still takes
// that path in v1.22.3.) Refreshes asked for meanwhile are merged into
// one.
func relearnLeaders(cl *kgo.Client) { cl.ForceMetadataRefresh() }

func record(m brokers.Message) *kgo.Record {
	return &kgo.Record{Key: []byte(m.Key), Value: m.Body}
}

// pending is a publish waiting for its transaction.
type pending struct {
	ctx  context.Context
	m    brokers.Message
	done func(error)
}

// errClosed ends a publish made after the producer closed.
var errClosed = errors.New("kafka producer closed")

// errAborted ends a publish whose transaction was aborted because another
// record of it failed.
var errAborted = errors.New("transaction aborted: another record of it failed")

// transact commits what is waiting, one transaction at a time: a publish
// is confirmed only once its transaction committed.
func (p *producer) transact(ctx context.Context) {
	defer close(p.txDone)
	for first := range p.txq {
		batch := []pending{first}
	more:
		for len(batch) < cap(p.txq) {
			select {
			case x, ok := <-p.txq:
				if !ok {
					break more
				}
				batch = append(batch, x)
			default:
				break more
			}
		}
		p.commit(ctx, batch)
	}
}

// commit publishes batch in one transaction.
func (p *producer) commit(ctx context.Context, batch []pending) {
	g, err := p.current()
	if err == nil {
		err = g.cl.BeginTransaction()
	}
	if err != nil {
		for _, x := range batch {
			x.done(p.outcome(g, err))
		}
		return
	}
	errs := make([]error, len(batch))
	recs := make([]*kgo.Record, len(batch))
	var wg sync.WaitGroup
	for i, x := range batch {
		wg.Add(1)
		recs[i] = record(x.m)
		g.cl.Produce(x.ctx, recs[i], func(_ *kgo.Record, err error) {
			errs[i] = err
			wg.Done()
		})
	}
	wg.Wait()
	end := kgo.TryCommit
	if errors.Join(errs...) != nil {
		end = kgo.TryAbort
	}
	eerr := g.cl.EndTransaction(ctx, end)
	if eerr == nil && end == kgo.TryCommit {
		p.ends.committed(recs)
	}
	for i, x := range batch {
		err := errs[i]
		switch {
		case err != nil:
		case eerr != nil:
			err = eerr
		case end == kgo.TryAbort:
			err = errAborted
		}
		err = p.outcome(g, err)
		if err == nil {
			p.confirmed(x.m.Intent)
		}
		x.done(err)
	}
}

func (p *producer) Close(ctx context.Context) {
	if p.txq != nil {
		p.sendMu.Lock()
		p.closed = true
		close(p.txq)
		p.sendMu.Unlock()
		select {
		case <-p.txDone:
		case <-ctx.Done():
		}
	}
	p.mu.Lock()
	g := p.gen
	p.mu.Unlock()
	_ = g.cl.Flush(ctx)
	g.cl.Close()
	p.closing.Wait()
}

// txnEnds is, per partition, the offset after the last record a
// transactional producer committed. A transaction ends with a commit
// marker that takes an offset and that no consumer receives or commits
// past, so the topic's end offset stays above the group's last commit;
// the backlog of a transactionally written topic is counted up to these
// ends instead. A dead client's aborted records always lie below them: its
// resend is committed after them.
type txnEnds struct {
	mu  sync.Mutex
	end map[int32]int64
}

func (e *txnEnds) committed(recs []*kgo.Record) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.end == nil {
		e.end = map[int32]int64{}
	}
	for _, r := range recs {
		e.end[r.Partition] = max(e.end[r.Partition], r.Offset+1)
	}
}

// lag counts the offsets between committed (the group's, per partition)
// and the ends.
func (e *txnEnds) lag(committed func(partition int32) int64) int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	var n int64
	for p, end := range e.end {
		n += max(end-committed(p), 0)
	}
	return n
}
