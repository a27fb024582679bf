package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/brokers/rabbitmq/cluster"
	"github.com/dqbench/dqbench/catalog"
)

// ErrNotInstalled is the mode: managed failure when rabbitmq-server is not
// installed; it names both other ways to a RabbitMQ.
var ErrNotInstalled = fmt.Errorf("%w: rabbitmq-server is not installed, and mode: managed (like dqbench brokers up) starts a local RabbitMQ cluster from it "+
	"(Debian: apt-get install rabbitmq-server; or set "+cluster.BinEnv+" to the directory of rabbitmq-server and rabbitmqctl); "+
	"or start one with \"docker compose up -d rabbitmq\" and use mode: external "+
	"(addresses: [amqp://guest:guest@127.0.0.1:5672/], or dqbench run --addresses URL)", brokers.ErrUnreachable)

// throwawayPrefix names the temporary directories of run clusters.
const throwawayPrefix = "dqbench-rabbitmq-"

// Acquire returns the cluster "dqbench brokers up rabbitmq" left running,
// when every node of it runs and the settings ask for the default cluster,
// or starts a throwaway one in a new temporary directory (owned: the
// caller stops it) of settings.Nodes nodes.
func Acquire(ctx context.Context, settings *catalog.RabbitMQSettings) (c *cluster.Cluster, owned bool, err error) {
	standard := settings == nil || settings.Standard()
	if c, err := cluster.Load(cluster.StateDir()); err == nil && standard && c.Healthy() {
		return c, false, nil
	}
	opts := cluster.Options{Owned: true}
	if settings != nil {
		opts.Size = settings.Nodes
		if t := settings.ConsumerTimeout.D(); t > 0 {
			opts.Config = fmt.Sprintf("consumer_timeout = %d\n", t.Milliseconds())
			opts.Advanced = fmt.Sprintf("[{rabbit, [{channel_tick_interval, %d}]}].\n", tickInterval(t).Milliseconds())
		}
	}
	if !cluster.Installed() {
		return nil, false, ErrNotInstalled
	}
	// Clusters of runs that were killed before they could stop them.
	_, _ = SweepClusters()
	dir, err := os.MkdirTemp("", throwawayPrefix)
	if err != nil {
		return nil, false, fmt.Errorf("managed RabbitMQ cluster: %w", err)
	}
	opts.Dir = dir
	c, err = cluster.Start(ctx, opts)
	if err != nil {
		os.RemoveAll(dir)
		if ctx.Err() != nil {
			return nil, false, fmt.Errorf("start a managed RabbitMQ cluster: %w", ctx.Err())
		}
		if errors.Is(err, cluster.ErrNoAccess) {
			return nil, false, fmt.Errorf("start a managed RabbitMQ cluster: %w", err) // not unreachable: it never started
		}
		return nil, false, fmt.Errorf("%w: start a managed RabbitMQ cluster: %v", brokers.ErrUnreachable, err)
	}
	return c, true, nil
}

// tickInterval is how often the managed nodes' channels check their
// consumer timeout (channel_tick_interval, 60 s by default in RabbitMQ,
// which would let a consumer overrun a short timeout by up to a minute):
// a quarter of the timeout, from 100 ms to 1 s.
func tickInterval(timeout time.Duration) time.Duration {
	return min(max(timeout/4, 100*time.Millisecond), time.Second)
}

// managed is RabbitMQ on a local cluster dqbench manages: every node's
// address, and the powers to stop a queue's leader, to restart a single
// node while a publish is in flight, and to say the nodes' consumer
// timeout.
type managed struct {
	*RabbitMQ
	cluster *cluster.Cluster
	owned   bool // started for this run: Close stops it

	failovers failovers
	restarts  restarts
	// consumerTimeout is the nodes' consumer_timeout (0: RabbitMQ's).
	consumerTimeout time.Duration

	errMu      sync.Mutex
	restartErr error // the first broker-restart that failed
}

var _ brokers.Broker = (*managed)(nil)

// failRestart notes a broker-restart that failed: the drain reports it.
func (m *managed) failRestart(err error) {
	m.errMu.Lock()
	defer m.errMu.Unlock()
	if m.restartErr == nil {
		m.restartErr = err
	}
}

func (m *managed) restartFailed() error {
	m.errMu.Lock()
	defer m.errMu.Unlock()
	return m.restartErr
}

// openManaged connects to a managed cluster, starting one unless
// "dqbench brokers up" left one running.
func openManaged(ctx context.Context, cfg brokers.Config, settings *catalog.RabbitMQSettings) (brokers.Broker, error) {
	cl, owned, err := Acquire(ctx, settings)
	if err != nil {
		return nil, err
	}
	b, err := Open(ctx, brokers.Config{Kind: cfg.Kind, Mode: catalog.External, Addresses: cl.URLs(), Settings: settings})
	if err != nil {
		if owned {
			err = errors.Join(err, cl.Stop())
		}
		return nil, err
	}
	m := &managed{RabbitMQ: b.(*RabbitMQ), cluster: cl, owned: owned, consumerTimeout: settings.ConsumerTimeout.D()}
	m.throwaway = owned
	m.failovers.init()
	return m, nil
}

// Name says which cluster this is, passwords masked.
func (m *managed) Name() string {
	how := "started for this run"
	if !m.owned {
		how = "started by dqbench brokers up"
	}
	urls := make([]string, len(m.cluster.Nodes))
	for i, n := range m.cluster.Nodes {
		urls[i] = catalog.MaskURL(n.URL())
	}
	return fmt.Sprintf("rabbitmq managed %d-node cluster (%s): %s", len(m.cluster.Nodes), how, strings.Join(urls, " "))
}

// Open declares the variant's queue, on the first node (so a quorum
// queue's leader is there: queues are placed client-local).
func (m *managed) Open(ctx context.Context, spec brokers.DestinationSpec) (brokers.Destination, error) {
	d, err := m.RabbitMQ.Open(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &managedDest{queueDest: d.(*queueDest), m: m, run: ctx}, nil
}

// Close waits for the nodes a failover stopped to run again, closes the
// admin connection and stops the cluster when it was started for the run.
func (m *managed) Close() error {
	// A cluster started for the run is stopped anyway: no need to wait.
	err := m.failovers.close(!m.owned)
	err = errors.Join(err, m.RabbitMQ.Close())
	if !m.owned {
		return err
	}
	if serr := m.cluster.Stop(); serr != nil {
		err = errors.Join(err, fmt.Errorf("%w: stop the managed RabbitMQ cluster: %v", brokers.ErrCleanup, serr))
	}
	return err
}

// managedDest is a variant's queue on a managed cluster.
type managedDest struct {
	*queueDest
	m   *managed
	run context.Context // the run's: a failover gives up when it ends (Ctrl-C, deadline)
}

var _ brokers.Powered = (*managedDest)(nil)

// Apply injects a managed cluster's own fault powers (stopping a queue's
// leader, restarting the single node, the consumer_timeout deadline) and
// a queue's (queueDest.Apply).
func (d *managedDest) Apply(ctx context.Context, p brokers.Power) error {
	switch p := p.(type) {
	case brokers.JoinFailover:
		return d.joinFailover(p.Fault)
	case brokers.AckDeadline:
		if d.m.consumerTimeout <= 0 {
			return fmt.Errorf("slow-processing holds a delivery past the broker's consumer_timeout, which is RabbitMQ's 30 minutes here: add consumer_timeout to the broker")
		}
		if d.spec.AutoAck {
			return brokers.ErrNowhere
		}
		// The channel is closed at the first tick after the timeout.
		p.Got(d.m.consumerTimeout + tickInterval(d.m.consumerTimeout))
		if p.Named != nil {
			p.Named("consumer_timeout")
		}
		return nil
	case brokers.RestartWhilePublishing:
		if n := len(d.m.cluster.Nodes); n != 1 {
			return fmt.Errorf("fault %s restarts the node of a single-node cluster, and this one has %d nodes: add nodes: 1 to the broker", p.Fault, n)
		}
		d.m.restarts.arm(d.m, d.queueDest, p)
		return nil
	case brokers.StopLeader:
		if p.StepDown {
			return fmt.Errorf("fault %s: how: step-down is a NATS stream's; a RabbitMQ quorum queue's leader is stopped by killing its node (how: kill)", p.Fault)
		}
		what, err := d.stopLeader(ctx, p.Fault, p.Intent, p.Attempt)
		if err == nil {
			p.Stopped(what)
		}
		return err
	}
	return d.queueDest.Apply(ctx, p)
}

// Consumer starts a consumer (queueDest.Consumer); with broker-restart
// armed, only once the node has restarted: until then the queue keeps
// everything published, as for consumers that were down or far behind.
func (d *managedDest) Consumer(ctx context.Context, gen int) (brokers.Consumer, error) {
	if d.m.restarts.armed(d.queueDest) {
		if err := d.m.restarts.awaitFirst(ctx); err != nil {
			return nil, err
		}
	}
	return d.queueDest.Consumer(ctx, gen)
}

func (d *managedDest) joinFailover(fault string) error {
	if d.queueType != catalog.QuorumQueue {
		return fmt.Errorf("fault %s stops the leader of a quorum queue: add queue_type: quorum to the broker", fault)
	}
	d.m.failovers.join(fault)
	return nil
}

func (d *managedDest) stopLeader(ctx context.Context, fault string, intent, attempt int) (string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(d.run, cancel)()
	return d.m.failovers.stop(ctx, d.m.cluster, round{fault, intent, attempt}, d.queue)
}

// meetWait bounds how long a destination that reached a failover waits for
// the others that joined it.
const meetWait = 20 * time.Second

// restartWait bounds how long Close waits for a stopped node to run again.
const restartWait = 90 * time.Second

// failovers stops queue leaders for the destinations of one run: each
// failover (a fault, an intent, an attempt) stops one node once, when every
// destination that joined the fault has reached it, and restarts the node
// in the background; the next failover waits until it runs again, so the
// cluster keeps a majority.
type failovers struct {
	mu     sync.Mutex
	joined map[string]int
	rounds map[round]*meeting

	ctx      context.Context // ends at Close: restarts give up
	cancel   context.CancelFunc
	restarts sync.WaitGroup
	errs     []error
}

type round struct {
	fault           string
	intent, attempt int
}

// meeting is one failover: who reached it and what was done.
type meeting struct {
	queues  []string
	arrived chan struct{} // closed when every joined destination arrived
	done    chan struct{} // closed when the node was stopped
	node    string
	leaders map[string]string
	err     error
}

func (f *failovers) init() {
	f.joined = map[string]int{}
	f.rounds = map[round]*meeting{}
	f.ctx, f.cancel = context.WithCancel(context.Background())
}

func (f *failovers) join(fault string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.joined[fault]++
}

func (f *failovers) stop(ctx context.Context, cl *cluster.Cluster, r round, queue string) (string, error) {
	f.mu.Lock()
	m, ok := f.rounds[r]
	first := !ok
	if first {
		m = &meeting{arrived: make(chan struct{}), done: make(chan struct{})}
		f.rounds[r] = m
	}
	m.queues = append(m.queues, queue)
	if len(m.queues) == f.joined[r.fault] {
		close(m.arrived)
	}
	f.mu.Unlock()
	if first {
		t := time.NewTimer(meetWait)
		select {
		case <-m.arrived:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		f.run(ctx, cl, m, queue)
		close(m.done)
	} else {
		select {
		case <-m.done:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	if m.err != nil {
		return "", m.err
	}
	what := fmt.Sprintf("stopped RabbitMQ node %s with SIGKILL", m.node)
	switch leader := m.leaders[queue]; {
	case leader == m.node:
		what += fmt.Sprintf(", the leader of quorum queue %s", queue)
	case leader != "":
		what += fmt.Sprintf(", the leader of %s (this variant's quorum queue %s was led by %s)", m.queues[0], queue, leader)
	}
	return what + "; clients reconnect to a survivor, the node restarts in the background", nil
}

// run stops the leader of queue (the first destination's to arrive).
func (f *failovers) run(ctx context.Context, cl *cluster.Cluster, m *meeting, queue string) {
	if err := waitGroup(ctx, &f.restarts); err != nil {
		m.err = fmt.Errorf("leader failover: the node stopped before did not run again in time: %w", err)
		return
	}
	m.leaders = map[string]string{}
	for _, q := range m.queues {
		leader, err := cl.Leader(ctx, q)
		if err != nil {
			m.err = fmt.Errorf("leader failover: find the leader of %s: %w", q, err)
			return
		}
		m.leaders[q] = leader
	}
	m.node = m.leaders[queue]
	i := cl.Index(m.node)
	if i < 0 {
		m.err = fmt.Errorf("leader failover: queue %s is led by %s, not a node of the managed cluster", queue, m.node)
		return
	}
	if err := cl.Kill(i); err != nil {
		m.err = fmt.Errorf("leader failover: stop %s: %w", m.node, err)
		return
	}
	f.restarts.Go(func() {
		// A node that fails to boot (a port not free yet) is tried again.
		var err error
		for range 3 {
			if err = cl.Restart(f.ctx, i); err == nil || f.ctx.Err() != nil {
				return
			}
			_ = cl.Kill(i)
			select {
			case <-f.ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
		f.mu.Lock()
		f.errs = append(f.errs, err)
		f.mu.Unlock()
	})
}

// waitGroup waits for wg within ctx.
func waitGroup(ctx context.Context, wg *sync.WaitGroup) error {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close waits (when wait, at most restartWait) for the stopped nodes to run
// again, then makes the restarts give up; it reports the restarts that
// failed.
func (f *failovers) close(wait bool) error {
	if f.cancel == nil {
		return nil
	}
	if wait {
		ctx, cancel := context.WithTimeout(context.Background(), restartWait)
		_ = waitGroup(ctx, &f.restarts)
		cancel()
	}
	f.cancel()
	f.restarts.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.errs) == 0 || !wait {
		return nil
	}
	return fmt.Errorf("%w: a node stopped by a leader failover did not start again: %v", brokers.ErrCleanup, errors.Join(f.errs...))
}

// Backlog is the queue's backlog (queueDest.Backlog), but a zero only
// counts when the queue's leader answered: a quorum queue whose leader is
// unreachable (dead, or not elected yet after a failover) reports 0
// messages and 0 consumers (rabbit_quorum_queue:stat), which would end
// the drain early and count the undelivered intents as lost. So a zero
// needs a consumer registered by this destination, and the broker
// counting at least as many, on a check before and one after.
func (d *managedDest) Backlog(ctx context.Context) (int64, error) {
	if err := d.m.restartFailed(); err != nil {
		return 0, err
	}
	if d.m.down.closed() || !d.leaderAnswers() {
		return 1, nil
	}
	n, err := d.queueDest.Backlog(ctx)
	if err != nil || n > 0 {
		return n, err
	}
	if !d.leaderAnswers() {
		return 1, nil
	}
	return 0, nil
}

// leaderAnswers reports whether the broker counts every consumer this
// destination (or, in a process variant, its processes) registered, and
// there is one.
func (d *managedDest) leaderAnswers() bool {
	q, err := d.inspect()
	if err != nil {
		return false
	}
	d.mu.Lock()
	consuming := 0
	for c := range d.live {
		if c.consuming {
			consuming++
		}
	}
	d.mu.Unlock()
	if d.out != nil {
		// A process variant's: the consumers its processes registered.
		consuming = d.out.watcher.Consumers()
	}
	return consuming > 0 && q.Consumers >= consuming
}

// SweepClusters stops the throwaway clusters of runs that were killed
// before they could stop them (their owner process is gone), and returns
// their directories: what dqbench clean and the next managed run do.
func SweepClusters() ([]string, error) {
	return cluster.Sweep(filepath.Join(os.TempDir(), throwawayPrefix+"*"))
}

// OrphanClusters lists the directories of throwaway clusters whose run was
// killed: what SweepClusters would stop.
func OrphanClusters() []string {
	return cluster.Orphans(filepath.Join(os.TempDir(), throwawayPrefix+"*"))
}
