// Package kafka runs dqbench against Kafka: franz-go's kfake in-process
// (mode embedded) or a real cluster (mode external), with franz-go's kgo as
// the client for both.
package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dqbench/dqbench/brokers"
)

// Kafka is an embedded or external Kafka cluster.
type Kafka struct {
	cluster *kfake.Cluster // nil when external
	seeds   []string
	admin   *kgo.Client
	adm     *kadm.Client
}

var _ brokers.Broker = (*Kafka)(nil)

// StartEmbedded starts a one-broker kfake cluster on a loopback port.
func StartEmbedded() (*Kafka, error) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		return nil, fmt.Errorf("start embedded Kafka (kfake): %w", err)
	}
	k, err := connect(context.Background(), c.ListenAddrs())
	if err != nil {
		c.Close()
		return nil, err
	}
	k.cluster = c
	return k, nil
}

// Connect connects to an external cluster at seeds.
func Connect(ctx context.Context, seeds []string) (*Kafka, error) {
	return connect(ctx, seeds)
}

func connect(ctx context.Context, seeds []string) (*Kafka, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DialTimeout(3*time.Second))
	if err != nil {
		return nil, fmt.Errorf("kafka client for %s: %w", strings.Join(seeds, ","), err)
	}
	const limit = 5 * time.Second
	pctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	if err := cl.Ping(pctx); err != nil {
		cl.Close()
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %s", limit)
		}
		return nil, fmt.Errorf("%w: cannot reach Kafka at %s: %v; start one with \"docker compose up -d kafka\" or use mode: embedded",
			brokers.ErrUnreachable, strings.Join(seeds, ","), err)
	}
	return &Kafka{seeds: seeds, admin: cl, adm: kadm.NewClient(cl)}, nil
}

// Name says which Kafka this is.
func (k *Kafka) Name() string {
	if k.cluster != nil {
		return "kafka (embedded kfake)"
	}
	return "kafka " + strings.Join(k.seeds, ",")
}

// Close closes the admin client and stops an embedded cluster.
func (k *Kafka) Close() error {
	k.admin.Close()
	if k.cluster != nil {
		k.cluster.Close()
	}
	return nil
}

// Open creates the variant's topic.
func (k *Kafka) Open(ctx context.Context, spec brokers.ChannelSpec) (brokers.Channel, error) {
	topic := "dqbench-" + spec.Name
	resp, err := k.adm.CreateTopic(ctx, int32(spec.Partitions), 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return nil, fmt.Errorf("create topic %s: %w", topic, err)
	}
	return &channel{k: k, spec: spec, topic: topic, group: topic + "-group", seen: map[int32]int64{}}, nil
}

// channel is one variant's topic and consumer group.
type channel struct {
	k     *Kafka
	spec  brokers.ChannelSpec
	topic string
	group string

	mu   sync.Mutex
	seen map[int32]int64 // highest offset delivered per partition, for the redelivered flag

	fault *kfake.FaultHandle
}

var (
	_ brokers.Channel              = (*channel)(nil)
	_ brokers.ProduceResponseLoser = (*channel)(nil)
)

func (c *channel) Producer(ctx context.Context) (brokers.Producer, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.k.seeds...),
		kgo.DefaultProduceTopic(c.topic),
		kgo.MaxBufferedRecords(c.spec.Window),
		kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		// A lost response is retried after this backoff; keep it short so
		// fault-heavy runs stay fast.
		kgo.RetryBackoffFn(func(int) time.Duration { return 2 * time.Millisecond }),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
	}
	switch c.spec.Acks {
	case "leader":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()))
	case "none":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()))
	default:
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	}
	if !c.spec.Idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka producer: %w", err)
	}
	return &producer{cl: cl, noAck: c.spec.Acks == "none"}, nil
}

type producer struct {
	cl    *kgo.Client
	noAck bool // acks=0: kgo reports success once the request is written
}

func (p *producer) Publish(ctx context.Context, m brokers.Message, done func(error)) {
	r := &kgo.Record{Key: []byte(m.Key), Value: m.Body}
	p.cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
		if err == nil && p.noAck {
			err = brokers.ErrUnconfirmed
		}
		done(err)
	})
}

func (p *producer) Close(ctx context.Context) {
	_ = p.cl.Flush(ctx)
	p.cl.Close()
}

func (c *channel) Consumer(ctx context.Context, gen int) (brokers.Consumer, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(c.k.seeds...),
		kgo.ConsumerGroup(c.group),
		kgo.ConsumeTopics(c.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(50*time.Millisecond),
		kgo.ClientID(fmt.Sprintf("%s-consumer-%d", c.topic, gen)),
	)
	if err != nil {
		return nil, fmt.Errorf("kafka consumer: %w", err)
	}
	return &consumer{c: c, cl: cl, max: c.spec.Prefetch}, nil
}

type consumer struct {
	c   *channel
	cl  *kgo.Client
	max int
	buf []*kgo.Record
}

func (k *consumer) Next(ctx context.Context) (brokers.Delivery, error) {
	for len(k.buf) == 0 {
		fs := k.cl.PollRecords(ctx, k.max)
		if err := ctx.Err(); err != nil {
			return brokers.Delivery{}, err
		}
		if fs.IsClientClosed() {
			return brokers.Delivery{}, errors.New("kafka consumer closed")
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			ferr = fmt.Errorf("fetch %s[%d]: %w", t, p, err)
		})
		if ferr != nil {
			return brokers.Delivery{}, ferr
		}
		k.buf = fs.Records()
	}
	r := k.buf[0]
	k.buf = k.buf[1:]
	k.c.mu.Lock()
	last, ok := k.c.seen[r.Partition]
	redelivered := ok && r.Offset <= last
	if !ok || r.Offset > last {
		k.c.seen[r.Partition] = r.Offset
	}
	k.c.mu.Unlock()
	intent, err := brokers.ParseKey(string(r.Key))
	if err != nil {
		return brokers.Delivery{}, fmt.Errorf("record %s[%d]@%d: %w", r.Topic, r.Partition, r.Offset, err)
	}
	return brokers.Delivery{
		Intent: intent, Body: r.Value, Partition: r.Partition, Offset: r.Offset,
		Redelivered: redelivered, Handle: r,
	}, nil
}

func (k *consumer) Ack(ctx context.Context, d brokers.Delivery) error {
	return k.cl.CommitRecords(ctx, d.Handle.(*kgo.Record))
}

// Abandon closes the client without committing, as a process that dies and
// is noticed at once by its supervisor: it leaves the group (so the
// replacement gets the partitions without waiting out the session timeout)
// and what was not committed is fetched again from the last committed
// offset.
func (k *consumer) Abandon() {
	k.buf = nil
	k.leaveAndClose(5 * time.Second)
}

// Close stops the consumer at the end of a run.
func (k *consumer) Close() { k.leaveAndClose(time.Second) }

// leaveAndClose bounds the group leave, so a hung broker cannot keep a run
// past its deadline.
func (k *consumer) leaveAndClose(limit time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	_ = k.cl.LeaveGroupContext(ctx)
	k.cl.Close()
}

// Drained reports whether the group's committed offsets have reached the end
// of every partition.
func (c *channel) Drained(ctx context.Context) (bool, error) {
	ends, err := c.k.adm.ListEndOffsets(ctx, c.topic)
	if err != nil {
		return false, err
	}
	committed, err := c.k.adm.FetchOffsets(ctx, c.group)
	if err != nil {
		return false, err
	}
	drained := true
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			drained = false
			return
		}
		if o.Offset == 0 {
			return
		}
		got, ok := committed.Lookup(o.Topic, o.Partition)
		if !ok || got.Err != nil || got.At < o.Offset {
			drained = false
		}
	})
	return drained, nil
}

func (c *channel) Close(ctx context.Context) error {
	if c.fault != nil {
		c.fault.Remove()
	}
	if c.k.cluster != nil {
		return nil // the whole embedded cluster goes away with the run
	}
	_, _ = c.k.adm.DeleteGroups(ctx, c.group)
	_, err := c.k.adm.DeleteTopics(ctx, c.topic)
	return err
}
