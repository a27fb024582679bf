// Package kafka runs dqbench against Kafka: franz-go's kfake in-process
// (mode embedded), a real cluster (mode external) or a real Apache Kafka
// dqbench starts from its jars (mode managed, managed.go), with
// franz-go's kgo as the client for all three.
package kafka

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
	nfkafka "github.com/dqbench/dqbench/netfault/kafka"
)

// groupHeartbeat is how often a group member (consumer or stage) tells
// the coordinator it is alive, and so how soon it learns that the group
// rebalances because another member left.
const groupHeartbeat = 100 * time.Millisecond

// realSessionTimeout is a group member's session on a real Kafka: how
// long the coordinator keeps a member that stopped heartbeating before it
// rebalances without it. A member whose client could not say goodbye (its
// coordinator's node was killed, a consumer process SIGKILLed) holds its
// partitions that long; kgo's default, 45 s, stalled a leader-failover
// run that long. 6 s is the least a broker takes by default
// (group.min.session.timeout.ms), so it holds on an external cluster too.
const realSessionTimeout = 6 * time.Second

// sessionTimeout is the group members' session: kgo's default on the
// embedded broker, realSessionTimeout on a real one.
func (k *Kafka) sessionTimeout() time.Duration {
	if k.cluster != nil {
		return 45 * time.Second
	}
	return realSessionTimeout
}

// Kafka is an embedded or external Kafka cluster.
type Kafka struct {
	cluster *kfake.Cluster // nil when external
	// seeds are what the run's clients are given: the embedded brokers',
	// or, on a real Kafka, the relays of route in front of upstream.
	seeds      []string
	upstream   []string // a real Kafka's brokers (managed or external)
	route      *route   // a real Kafka's: the admin's, the consumers' and the stage's way to it (proxy.go)
	admin      *kgo.Client
	adm        *kadm.Client
	partitions int32
	tap        *tap // embedded only: sees every client connection (tap.go)
	// consumerVersions: on a one-broker embedded cluster, what its
	// consumers speak without asking (handshakeFree); nil otherwise.
	consumerVersions *kversion.Versions

	epochsOnce sync.Once
	epochs     *leaderEpochs // embedded, with leader-move (leaders.go)

	managed *managedCluster // mode: managed (managed.go); nil otherwise

	// sec are the options of the broker's tls and auth (external only,
	// reached without relays: security.go), which every client gets.
	sec []kgo.Opt

	// closing are the abandoned consumers' clients still closing (see
	// consumer.Abandon); Close waits for them.
	closing sync.WaitGroup
}

var _ brokers.Broker = (*Kafka)(nil)

// Open starts or connects to the Kafka the scenario describes.
func Open(ctx context.Context, cfg brokers.Config) (brokers.Broker, error) {
	settings, _ := cfg.Settings.(*catalog.KafkaSettings)
	if settings == nil {
		settings = new(catalog.KafkaSettings)
		settings.Defaults()
	}
	var k *Kafka
	var err error
	switch cfg.Mode {
	case catalog.External:
		if secured(settings) {
			k, err = connectSecured(ctx, cfg.Addresses, settings)
			break
		}
		k, err = Connect(ctx, cfg.Addresses)
	case catalog.Managed:
		k, err = openManaged(ctx, settings)
	default:
		k, err = StartEmbedded(settings.Brokers)
	}
	if err != nil {
		return nil, err
	}
	k.partitions = int32(settings.Partitions)
	return k, nil
}

// StartEmbedded starts a kfake cluster of n brokers (at least 1) on
// loopback ports.
func StartEmbedded(n int) (*Kafka, error) {
	t := newTap()
	c, err := kfake.NewCluster(kfake.NumBrokers(max(n, 1)), kfake.ListenFn(t.listen))
	if err != nil {
		return nil, fmt.Errorf("start embedded Kafka (kfake): %w", err)
	}
	k, err := connect(context.Background(), c.ListenAddrs())
	if err != nil {
		c.Close()
		return nil, err
	}
	k.cluster = c
	k.tap = t
	if n <= 1 {
		if k.consumerVersions, err = handshakeFree(k.admin); err != nil {
			k.Close()
			return nil, err
		}
	}
	return k, nil
}

// handshakeFree returns the versions of every request the cluster of cl
// takes but ApiVersions: given as a consumer's kgo.MaxVersions, the
// consumer sends no ApiVersions on the connections it opens (four per
// consumer, about 0.3 ms of a replacement's start after a crash) and
// speaks the versions the handshake would have agreed. Without the
// broker's own list, kgo also skips the leader-epoch validation of
// KIP-320 (OffsetForLeaderEpoch, one more round trip): only on a
// one-broker cluster, where no leader moves and the epoch never changes.
func handshakeFree(cl *kgo.Client) (*kversion.Versions, error) {
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(context.Background(), cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		return nil, fmt.Errorf("embedded Kafka (kfake): ApiVersions: %w", err)
	}
	// What the handshake would agree: the broker's and kgo's own cap
	// (kversion.Stable, its default MaxVersions), whichever is lower.
	vs, stable := kversion.FromApiVersionsResponse(resp), kversion.Stable()
	vs.EachMaxKeyVersion(func(key, v int16) {
		if s, ok := stable.LookupMaxKeyVersion(key); !ok || s < v {
			vs.SetMaxKeyVersion(key, s) // -1 (not in kgo's list) removes it
		}
	})
	vs.SetMaxKeyVersion(int16(kmsg.ApiVersions), -1)
	// JoinGroup v4 and later make a member without an id join twice
	// (KIP-394: the first answer is MemberIDRequired, with the id to come
	// back with); v3 admits it in one round trip. The id only guards
	// against a client that retries a join whose answer it lost, which a
	// loopback connection to kfake does not lose.
	if v, ok := vs.LookupMaxKeyVersion(int16(kmsg.JoinGroup)); ok && v > 3 {
		vs.SetMaxKeyVersion(int16(kmsg.JoinGroup), 3)
	}
	return vs, nil
}

// Connect connects to a real cluster (external or managed) at upstream:
// every client of the run reaches it through relays of dqbench's own, in
// front of each broker (proxy.go).
func Connect(ctx context.Context, upstream []string) (*Kafka, error) {
	r := newRoute(nil)
	seeds, err := r.seeds(upstream)
	if err == nil {
		var k *Kafka
		if k, err = connectTo(ctx, seeds, upstream); err == nil {
			k.upstream, k.route = upstream, r
			return k, nil
		}
	}
	return nil, errors.Join(err, r.Close())
}

func connect(ctx context.Context, seeds []string) (*Kafka, error) {
	return connectTo(ctx, seeds, seeds)
}

// connectTo starts the admin client on seeds; shown are the addresses a
// message names.
func connectTo(ctx context.Context, seeds, shown []string, sec ...kgo.Opt) (*Kafka, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.DialTimeout(3 * time.Second), kgo.DisableClientMetrics()}, sec...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka client for %s: %w", strings.Join(shown, ","), err)
	}
	const limit = 5 * time.Second
	pctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	if err := cl.Ping(pctx); err != nil {
		cl.Close()
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %s", limit)
		}
		return nil, fmt.Errorf("%w: cannot reach Kafka at %s: %w; start one with \"docker compose up -d kafka\" or use mode: embedded or managed",
			brokers.ErrUnreachable, strings.Join(shown, ","), err)
	}
	return &Kafka{seeds: seeds, admin: cl, adm: kadm.NewClient(cl), partitions: 1}, nil
}

// Name says which Kafka this is.
func (k *Kafka) Name() string {
	if k.cluster != nil {
		return "kafka (embedded kfake)"
	}
	if k.managed != nil {
		return k.managed.name()
	}
	return "kafka " + strings.Join(k.upstream, ",")
}

// Close closes the admin client and stops an embedded cluster, or a
// managed one started for the run (a standing one gets back the node a
// leader-failover killed).
func (k *Kafka) Close() error {
	k.closing.Wait()
	var ferr error
	if k.managed != nil {
		ferr = k.managed.failovers.close(k, !k.managed.owned)
	}
	k.admin.Close()
	if k.cluster != nil {
		k.cluster.Close()
	}
	err := ferr
	if k.route != nil {
		err = errors.Join(err, k.route.Close())
	}
	if k.managed != nil {
		err = errors.Join(err, k.managed.close())
	}
	return err
}

// Open creates the variant's topic.
func (k *Kafka) Open(ctx context.Context, spec brokers.DestinationSpec) (brokers.Destination, error) {
	topic := "dqbench-" + spec.Name
	d := &topicDest{k: k, spec: spec, topic: topic, group: topic + "-group", seen: map[int32]int64{}, partitions: k.partitions}
	if s, ok := spec.Settings.(*catalog.KafkaSettings); ok && s != nil {
		d.settings = *s
		if s.Partitions > 0 { // the variant's, when it overrides them
			d.partitions = int32(s.Partitions)
		}
	}
	if k.managed != nil {
		k.managed.failovers.opening.Add(1)
		defer k.managed.failovers.opening.Add(-1)
	}
	if err := k.createTopic(ctx, d.partitions, topic); err != nil {
		return nil, fmt.Errorf("create topic %s: %w", topic, err)
	}
	if spec.Stage != nil {
		d.stage = newStage(*spec.Stage, topic, d.settings.Isolation == catalog.ReadCommitted)
		if err := k.createTopic(ctx, d.partitions, d.stage.out); err != nil {
			return nil, fmt.Errorf("create topic %s: %w", d.stage.out, err)
		}
	}
	if k.cluster != nil {
		return embeddedDest{d}, nil
	}
	topics := []string{topic}
	if d.stage != nil {
		topics = append(topics, d.stage.out)
	}
	for _, t := range topics {
		if err := k.waitHosted(ctx, t, d.partitions); err != nil {
			return nil, err
		}
	}
	if k.managed != nil {
		k.managed.failovers.opened.Add(1)
	}
	return proxiedDest{d}, nil
}

// replicas is the replication factor of the topics a run creates: 1 on
// the embedded broker (kfake does not replicate); on an external cluster,
// -1, its default.replication.factor (3 on docker-compose's three-broker
// cluster, where min.insync.replicas=2 makes acks=all wait for two).
func (k *Kafka) replicas() int16 {
	if k.cluster != nil {
		return 1
	}
	return -1
}

// topicDest is one variant's topic and consumer group.
type topicDest struct {
	k    *Kafka
	spec brokers.DestinationSpec
	// settings are the variant's Kafka settings (its producer client and
	// consumer isolation).
	settings catalog.KafkaSettings
	topic    string
	group    string
	// partitions of the variant's topics (the broker's, or the variant's
	// kafka: partitions).
	partitions int32

	mu   sync.Mutex
	seen map[int32]int64 // highest offset delivered per partition, for the redelivered flag

	fault      *kfake.FaultHandle
	crash      *producerCrash     // producer-crash (faults.go)
	crashFault *kfake.FaultHandle // its kfake fault
	ends       *txnEnds           // a transactional producer's (producer.go)
	stage      *stageState        // nil without a stage (stage.go)
	moves      leaderMoves        // leader-move (leaders.go)

	// On a real Kafka, the producer's own route to the cluster and the
	// faults its filters inject (proxied.go): those that lose produce
	// responses, and the rules of those that act around them.
	produceFaults []produceFault
	produceRules  []nfkafka.Rule
	produceRoute  *route
	// ackLost chooses the consumers' commits to lose (proxied.go).
	ackLost *ackLost
	// watch is a process variant's, on a real Kafka (relaywatch.go).
	watch *relayWatch
	// restart is broker-restart's, on a managed one-node Kafka
	// (restart.go).
	restart *restartRule
}

var _ brokers.Destination = (*topicDest)(nil)

// embeddedDest is a topic on the embedded broker, which can also inject
// faults inside kfake (faults.go). A topic on an external cluster lacks
// these powers, so a type assertion for them fails there.
type embeddedDest struct{ *topicDest }

var (
	_ brokers.Destination     = embeddedDest{}
	_ brokers.Powered         = embeddedDest{}
	_ brokers.ConsumerWatcher = embeddedDest{}
)

// refusals are the Kafka errors that say the broker did not write the
// record, whatever an earlier attempt did: the record itself, or the
// topic, is not accepted. Retriable errors and those of the idempotent
// producer's bookkeeping (an out-of-order sequence) leave the outcome
// unknown.
var refusals = []*kerr.Error{
	kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidRecord, kerr.CorruptMessage,
	kerr.InvalidTimestamp, kerr.PolicyViolation, kerr.TopicAuthorizationFailed, kerr.InvalidTopicException,
	kerr.InvalidRequiredAcks,
}

// refused marks err as brokers.ErrRefused when it is one of refusals.
func refused(err error) error {
	for _, r := range refusals {
		if errors.Is(err, r) {
			return fmt.Errorf("%w: %w", brokers.ErrRefused, err)
		}
	}
	return err
}

// fetchMaxBytes bounds what one fetch of a consumer returns (at least one
// record batch, however large).
const fetchMaxBytes = 32 << 10

func (c *topicDest) Consumer(ctx context.Context, gen int) (brokers.Consumer, error) {
	topic := c.topic
	if c.stage != nil {
		topic = c.stage.out // the consumers read what the stage wrote
	}
	k := &consumer{c: c, max: c.spec.Prefetch, unacked: map[int32]int{}, acked: make(chan struct{})}
	seeds, err := k.seeds()
	if err != nil {
		return nil, err
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ConsumerGroup(c.group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		// Partitions that move to another member are handed over
		// committed: see consumer.revoked.
		kgo.OnPartitionsRevoked(func(ctx context.Context, _ *kgo.Client, lost map[string][]int32) {
			k.revoked(ctx, lost, true)
		}),
		kgo.OnPartitionsLost(func(ctx context.Context, _ *kgo.Client, lost map[string][]int32) {
			k.revoked(ctx, lost, false)
		}),
		kgo.FetchMaxWait(50 * time.Millisecond),
		kgo.ClientID(fmt.Sprintf("%s-consumer-%d", c.topic, gen)),
		// Leaders move (leader-move): find the new one quickly.
		kgo.MetadataMinAge(50 * time.Millisecond),
		// Without fetch sessions, closing a client sends no last fetch
		// to end its session (about a millisecond per crash on kfake);
		// what is fetched is the same.
		kgo.DisableFetchSessions(),
		// A member that leaves (a crash) makes the group rebalance; the
		// others learn of it at their next heartbeat, 3 s apart by
		// default: with two instances, the partitions of the one that
		// left waited half a second on average (up to 3 s) for their next
		// owner. Same assignment, sooner.
		kgo.HeartbeatInterval(groupHeartbeat),
		kgo.SessionTimeout(c.k.sessionTimeout()),
		// No KIP-714 client metrics: a client that closes (a crash)
		// pushes its last metrics and waits for the answer, about a
		// millisecond on kfake, while its replacement starts.
		kgo.DisableClientMetrics(),
		// A replacement's first fetch, after a crash, is the largest
		// part of its start: from the fetch reaching kfake to the first
		// record polled took 2 to 3 ms for kgo's default 50 MB (kfake
		// encodes and kgo decodes all that the crashed instance had
		// fetched and more), 1.1 ms for 64 KiB, 0.38 ms for 32 KiB and
		// 0.2 ms for 16 KiB (a loop of 100 crashes on kfake, the means);
		// the fetches after it overlap the processing. Not 16 KiB: a
		// read_committed consumer of kafka-producer-restart then got
		// both copies of a restarted transactional producer's publish
		// now and then under load (seed 4, 12 runs at a time: 5 runs in
		// 60, 1 in 100), none in 400 with 32 KiB nor in 400 with 64, nor
		// in 253 with 16 KiB on a real Kafka: kfake's, not yet found.
		kgo.FetchMaxBytes(fetchMaxBytes), kgo.FetchMaxPartitionBytes(fetchMaxBytes),
	}
	opts = append(opts, k.commitOpts()...)
	if c.settings.Isolation == catalog.ReadCommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	if c.ackLost != nil {
		// A commit ack-lost drops may be the first request on its
		// connection, where kgo takes an EOF for missing SASL and
		// gives up: it is to be sent again, as any other.
		opts = append(opts, kgo.AlwaysRetryEOF())
	}
	if c.k.consumerVersions != nil {
		opts = append(opts, kgo.MaxVersions(c.k.consumerVersions))
	}
	opts = append(opts, c.k.sec...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		k.closeRoute()
		return nil, fmt.Errorf("kafka consumer: %w", err)
	}
	k.cl = cl
	return k, nil
}

// handoverWait bounds how long a member whose partitions move waits for
// the acks of the records of them it handed over (consumer.revoked): a
// processing slower than this is a consumer slower than the rebalance,
// whose record the new owner gets again.
const handoverWait = 10 * time.Second

type consumer struct {
	c   *topicDest
	cl  *kgo.Client
	max int
	// route is the instance's own way to a real Kafka, which the network
	// faults on its connections act on (proxied.go); nil on the embedded
	// broker.
	route *route
	// commitsLost are the commits ack-lost chose, to drop as they pass
	// (proxied.go).
	commitsLost lostCommits

	mu  sync.Mutex
	buf []*kgo.Record // polled, not yet handed over
	// unacked counts, per partition, the records handed over and not
	// acked yet; acked is closed (and replaced) at each ack.
	unacked map[int32]int
	acked   chan struct{}
	// revokes counts the partitions revoked so far, by partition: a
	// poll that a revoke overlapped drops their records.
	revokes map[int32]int
	// gone: abandoned or closed; nothing it holds will be acked.
	gone bool
	// auto: the client auto-commits (autocommit.go).
	auto autoCommit
}

func (k *consumer) Next(ctx context.Context) (brokers.Delivery, error) {
	k.mu.Lock()
	for len(k.buf) == 0 {
		before := maps.Clone(k.revokes)
		k.mu.Unlock()
		k.auto.polling()
		fs := k.cl.PollRecords(ctx, k.max)
		k.auto.polled(fs)
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
		k.mu.Lock()
		// Records of a partition revoked while they were being polled
		// are the new owner's, from the last commit.
		k.buf = slices.DeleteFunc(fs.Records(), func(r *kgo.Record) bool { return k.revokes[r.Partition] != before[r.Partition] })
	}
	r := k.buf[0]
	k.buf = k.buf[1:]
	k.unacked[r.Partition]++
	k.mu.Unlock()
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
	d := brokers.Delivery{
		Intent: intent, Body: r.Value, Position: fmt.Sprintf("%d@%d", r.Partition, r.Offset),
		Redelivered: redelivered, Handle: r,
	}
	k.auto.handed(d, r)
	return d, nil
}

func (k *consumer) Ack(ctx context.Context, d brokers.Delivery) error {
	r := d.Handle.(*kgo.Record)
	defer k.settled(r)
	if k.auto.on {
		return nil // the client commits by itself
	}
	k.loseCommit(d)
	return k.cl.CommitRecords(ctx, r)
}

// AckBatch commits ds in one OffsetCommit: each partition's commit is the
// offset after the last of ds on it (brokers.BatchAcker).
func (k *consumer) AckBatch(ctx context.Context, ds []brokers.Delivery) error {
	rs := make([]*kgo.Record, len(ds))
	for i, d := range ds {
		rs[i] = d.Handle.(*kgo.Record)
	}
	defer k.settled(rs...)
	if k.auto.on {
		return nil // the client commits by itself
	}
	k.loseCommit(ds...)
	return k.cl.CommitRecords(ctx, rs...)
}

// settled notes that the commit of rs is over (done or failed).
func (k *consumer) settled(rs ...*kgo.Record) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, r := range rs {
		if k.unacked[r.Partition] > 0 {
			k.unacked[r.Partition]--
		}
	}
	close(k.acked)
	k.acked = make(chan struct{})
}

// revoked hands over partitions that move to another member: it drops
// their records polled and not handed over yet, and, when wait, waits (at
// most handoverWait) until every record of them it handed over is acked.
// kgo calls it before the partitions go to the new owner, which fetches
// from the last commit: without it, this member would go on with the
// records it had polled (up to prefetch), and the new owner would get
// them again, a rebalance duplicating records that no crash left
// unacked. Not waited for by an abandoned member (it acks nothing more)
// nor for partitions lost (kgo's OnPartitionsLost: commits would fail).
func (k *consumer) revoked(ctx context.Context, lost map[string][]int32, wait bool) {
	moving := map[int32]bool{}
	for _, ps := range lost {
		for _, p := range ps {
			moving[p] = true
		}
	}
	if len(moving) == 0 {
		return
	}
	k.mu.Lock()
	if k.revokes == nil {
		k.revokes = map[int32]int{}
	}
	for p := range moving {
		k.revokes[p]++
	}
	k.buf = slices.DeleteFunc(k.buf, func(r *kgo.Record) bool { return moving[r.Partition] })
	k.mu.Unlock()
	if !wait {
		return
	}
	k.awaitHandover(ctx, moving)
	k.commitHead(ctx, moving)
}

// awaitHandover waits (at most handoverWait) until every record of the
// moving partitions handed over is acked, or the consumer is gone.
func (k *consumer) awaitHandover(ctx context.Context, moving map[int32]bool) {
	limit := time.NewTimer(handoverWait)
	defer limit.Stop()
	for {
		k.mu.Lock()
		held := 0
		for p := range moving {
			held += k.unacked[p]
		}
		gone, acked := k.gone, k.acked
		k.mu.Unlock()
		if held == 0 || gone {
			return
		}
		select {
		case <-acked:
		case <-limit.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// Abandon closes the client without committing, as a process that dies and
// is noticed at once by its supervisor: it leaves the group (so the
// replacement gets the partitions without waiting out the session timeout)
// and what was not committed is fetched again from the last committed
// offset. It returns once the client has left the group; the rest of its
// closing (its connections, its goroutines) goes on in the background, as
// a dead process's sockets close while its replacement starts, and the
// broker's Close waits for it.
func (k *consumer) Abandon() {
	k.leaving()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_ = k.cl.LeaveGroupContext(ctx)
	cancel()
	k.c.k.closing.Go(func() {
		k.cl.Close()
		k.closeRoute()
	})
}

// leaving marks the consumer gone, with nothing more to hand over: the
// revoke of its leave waits for no ack.
func (k *consumer) leaving() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.gone = true
	k.buf = nil
	close(k.acked)
	k.acked = make(chan struct{})
}

// Close stops the consumer at the end of a run.
func (k *consumer) Close(ctx context.Context) {
	k.leaving()
	k.leaveAndClose(ctx)
}

// leaveAndClose bounds the group leave by ctx, so a hung broker cannot keep
// a run past its deadline.
func (k *consumer) leaveAndClose(ctx context.Context) {
	_ = k.cl.LeaveGroupContext(ctx)
	k.cl.Close()
	k.closeRoute()
}

// Backlog counts the records between the group's committed offsets and the
// end of each partition; with a stage, both hops (stageBacklog).
func (c *topicDest) Backlog(ctx context.Context) (int64, error) {
	if c.stage != nil {
		return c.stageBacklog(ctx)
	}
	if c.ends != nil {
		return c.txnLag(ctx)
	}
	return c.lag(ctx, c.topic, c.group)
}

// txnLag is the backlog of a topic a transactional producer writes: up
// to the end of its last committed records, not the commit markers after
// them (txnEnds).
func (c *topicDest) txnLag(ctx context.Context) (int64, error) {
	committed, err := c.k.adm.FetchOffsets(ctx, c.group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		committed, err = nil, nil
	}
	if err != nil {
		return 0, err
	}
	return c.ends.lag(func(p int32) int64 {
		if got, ok := committed.Lookup(c.topic, p); ok && got.Err == nil && got.At > 0 {
			return got.At
		}
		return 0
	}), nil
}

// lag counts the records of topic between group's committed offsets and
// the end of each partition's log (logEnds).
func (c *topicDest) lag(ctx context.Context, topic, group string) (int64, error) {
	ends, err := c.k.logEnds(ctx, topic)
	if err != nil {
		return 0, err
	}
	committed, err := c.k.adm.FetchOffsets(ctx, group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		// No consumer has joined or committed yet (kfake says so; a real
		// broker answers with no offsets): everything is backlog.
		committed, err = nil, nil
	}
	if err != nil {
		return 0, err
	}
	var backlog int64
	var lerr error
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			lerr = o.Err
			return
		}
		at := int64(0)
		if got, ok := committed.Lookup(o.Topic, o.Partition); ok && got.Err == nil && got.At > 0 {
			at = got.At
		}
		backlog += max(o.Offset-at, 0)
	})
	return backlog, lerr
}

func (c *topicDest) Close(ctx context.Context) error {
	if c.fault != nil {
		c.fault.Remove()
	}
	if c.crashFault != nil {
		c.crashFault.Remove()
	}
	if c.stage != nil && c.stage.fault != nil {
		c.stage.fault.Remove()
	}
	c.moves.stop()
	for _, r := range []*route{c.produceRoute, c.outsideRoute()} {
		if r == nil {
			continue
		}
		if err := r.Close(); err != nil {
			return err
		}
	}
	if c.k.cluster != nil {
		return nil // the whole embedded cluster goes away with the run
	}
	var errs []error
	if resp, err := c.k.adm.DeleteGroups(ctx, c.group); err != nil {
		errs = append(errs, fmt.Errorf("delete group %s: %w", c.group, err))
	} else if err := resp.Error(); err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		errs = append(errs, fmt.Errorf("delete group %s: %w", c.group, err))
	}
	groups, topics := []string{}, []string{c.topic}
	if c.stage != nil {
		groups, topics = append(groups, c.stage.group), append(topics, c.stage.out)
	}
	for _, g := range groups {
		if resp, err := c.k.adm.DeleteGroups(ctx, g); err != nil {
			errs = append(errs, fmt.Errorf("delete group %s: %w", g, err))
		} else if err := resp.Error(); err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
			errs = append(errs, fmt.Errorf("delete group %s: %w", g, err))
		}
	}
	for _, t := range topics {
		if resp, err := c.k.adm.DeleteTopics(ctx, t); err != nil {
			errs = append(errs, fmt.Errorf("delete topic %s: %w", t, err))
		} else if err := resp.Error(); err != nil {
			errs = append(errs, fmt.Errorf("delete topic %s: %w", t, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w on %s: %v", brokers.ErrCleanup, c.k.Name(), err)
	}
	return nil
}

// Outside says where a consumer process connects: the embedded broker, the
// variant's topic and group.
func (c embeddedDest) Outside() brokers.Outside {
	return brokers.Outside{Addresses: c.k.seeds, Topic: c.topic, Group: c.group}
}

// WatchConsumers shows w the fetches and commits of the variant's topic on
// every connection to the embedded broker (tap.go).
func (c embeddedDest) WatchConsumers(w brokers.ConsumerWatch) {
	var id [16]byte
	if info := c.k.cluster.TopicInfo(c.topic); info != nil {
		id = info.TopicID
	}
	c.k.tap.watch(c.topic, c.group, id, w)
}

// RemoveMembers sends a LeaveGroup for members, as each would on a clean
// shutdown: the group rebalances at once instead of after their session
// timeout.
func (c *topicDest) RemoveMembers(ctx context.Context, members []string) error {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = c.group
	for _, m := range members {
		lm := kmsg.NewLeaveGroupRequestMember()
		lm.MemberID = m
		req.Members = append(req.Members, lm)
	}
	resp, err := req.RequestWith(ctx, c.k.admin)
	if err != nil {
		return fmt.Errorf("remove members %v from group %s: %w", members, c.group, err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return fmt.Errorf("remove members %v from group %s: %w", members, c.group, err)
	}
	return nil
}

// logEnds returns where each partition of topic ends: on the embedded
// broker, its high watermark, which is its log's end (kfake does not
// replicate); on a real Kafka, the end of the leader's log, which a
// ListOffsets request with the debugging replica id (-2) returns instead
// of the high watermark a consumer's gets. Records past the high watermark
// are stored and not yet readable: on a replicated topic, until the
// followers fetched them (replica.fetch.wait.max.ms, 500 ms by default).
// A backlog up to the high watermark came to 0 while an acks=0
// producer's last records were still on their way to the followers, and
// the drain ended before they were read (kafka-leader-move's acks-none
// counted all 1,000 lost on a three-node cluster).
func (k *Kafka) logEnds(ctx context.Context, topic string) (kadm.ListedOffsets, error) {
	if k.cluster != nil {
		return k.adm.ListEndOffsets(ctx, topic)
	}
	ps, err := k.freshPartitions(ctx, topic)
	if err != nil {
		return nil, err
	}
	// Each partition's own leader is asked: any replica answers a
	// debugging request, and a follower's end may be one it is about to
	// truncate (after a failover, the old leader's records it fetched and
	// the new leader lacks), which the consumers will never read. kgo
	// would route by its cached metadata, a leader maybe gone.
	byLeader := map[int32][]int32{}
	for _, p := range ps {
		if p.Leader < 0 {
			return nil, fmt.Errorf("list the ends of %s: partition %d has no leader", topic, p.Partition)
		}
		byLeader[p.Leader] = append(byLeader[p.Leader], p.Partition)
	}
	out := kadm.ListedOffsets{topic: {}}
	for leader, partitions := range byLeader {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -2 // debugging: the log end, not the high watermark
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		for _, p := range partitions {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, k.admin.Broker(int(leader)))
		if err != nil {
			return nil, fmt.Errorf("list the ends of %s at node %d: %w", topic, leader, err)
		}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				out[topic][rp.Partition] = kadm.ListedOffset{Topic: topic, Partition: rp.Partition, Offset: rp.Offset, LeaderEpoch: rp.LeaderEpoch, Err: kerr.ErrorForCode(rp.ErrorCode)}
			}
		}
	}
	return out, nil
}
