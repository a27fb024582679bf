package nats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/brokers/nats/cluster"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/leftover"
)

// ErrNotInstalled is the mode: managed failure when nats-server is not
// installed; it says how to install it and names the other ways to a NATS.
var ErrNotInstalled = fmt.Errorf("%w: nats-server is not installed, and mode: managed (like dqbench brokers up nats) starts a local 3-node JetStream cluster from it "+
	"(Debian: apt-get install nats-server; or download it from https://github.com/nats-io/nats-server/releases, or go install github.com/nats-io/nats-server/v2@latest, "+
	"and put it on PATH or set "+cluster.BinEnv+" to it); "+
	"or start one with \"docker compose up -d nats-1 nats-2 nats-3\" and use mode: external "+
	"(addresses: [nats://127.0.0.1:4231, nats://127.0.0.1:4232, nats://127.0.0.1:4233], or dqbench run --addresses URL), or use mode: embedded", brokers.ErrUnreachable)

// throwawayPrefix names the temporary directories of run clusters.
const throwawayPrefix = "dqbench-nats-cluster-"

// Acquire returns the cluster "dqbench brokers up nats" left running, when
// every node of it runs, or starts a throwaway one in a new temporary
// directory (owned: the caller stops it; its processes die with this one).
func Acquire(ctx context.Context) (c *cluster.Cluster, owned bool, err error) {
	if c, err := cluster.Load(cluster.StateDir()); err == nil && c.Healthy() {
		return c, false, nil
	}
	if !cluster.Installed() {
		return nil, false, ErrNotInstalled
	}
	_, _ = SweepClusters()
	dir, err := leftover.MkdirTemp(throwawayPrefix)
	if err != nil {
		return nil, false, fmt.Errorf("managed NATS cluster: %w", err)
	}
	c, err = cluster.Start(ctx, cluster.Options{Dir: dir, Owned: true})
	if err != nil {
		if os.RemoveAll(dir) == nil {
			leftover.Forget(leftover.Entry{Kind: leftover.Dir, Name: dir})
		}
		if ctx.Err() != nil {
			return nil, false, fmt.Errorf("start a managed NATS cluster: %w", ctx.Err())
		}
		return nil, false, fmt.Errorf("%w: start a managed NATS cluster: %v", brokers.ErrUnreachable, err)
	}
	return c, true, nil
}

// SweepClusters stops the throwaway clusters of runs that were killed
// before they could stop them (their nodes die with their run; this stops
// what a platform without Pdeathsig left), and returns their directories.
func SweepClusters() ([]string, error) {
	return cluster.Sweep(filepath.Join(os.TempDir(), throwawayPrefix+"*"))
}

// OrphanClusters lists the directories of throwaway clusters whose run was
// killed: what SweepClusters would stop.
func OrphanClusters() []string {
	return cluster.Orphans(filepath.Join(os.TempDir(), throwawayPrefix+"*"))
}

// managed is NATS on a local 3-node JetStream cluster dqbench manages:
// every node's URL, and the power to kill or step down a stream's leader.
type managed struct {
	*Broker
	cluster *cluster.Cluster
	owned   bool // started for this run: Close stops it
	// lead is the node that leads every variant's stream, and where every
	// client connects first.
	lead string

	opening   atomic.Int64 // destinations being opened (Open)
	opened    atomic.Int64 // destinations opened
	failovers failovers
}

var _ brokers.Broker = (*managed)(nil)

// openManaged connects to a managed cluster, starting one unless "dqbench
// brokers up nats" left one running. It picks the node that will lead
// every variant's stream (lead: the first node that does not lead the
// JetStream meta group, so a failover that kills it leaves the cluster's
// API answering), and gives every client all the nodes' URLs, lead first
// (connect: no random pick): every client is connected to the streams'
// leader, and one whose node dies reconnects to the next.
func openManaged(ctx context.Context, settings catalog.NATSSettings) (brokers.Broker, error) {
	cl, owned, err := Acquire(ctx)
	if err != nil {
		return nil, err
	}
	fail := func(err error) error {
		if owned {
			err = errors.Join(err, stopOwned(cl))
		}
		return err
	}
	metaLeader, err := cl.MetaLeader(ctx)
	if err != nil {
		return nil, fail(fmt.Errorf("%w: managed NATS cluster: %v", brokers.ErrUnreachable, err))
	}
	lead := -1
	for i, s := range cl.Status() {
		if s.Running && s.Name != metaLeader && lead < 0 {
			lead = i
		}
	}
	if lead < 0 {
		return nil, fail(fmt.Errorf("%w: managed NATS cluster: no running node besides the meta leader %s", brokers.ErrUnreachable, metaLeader))
	}
	urls := []string{cl.Nodes[lead].URL()}
	for i, n := range cl.Nodes {
		if i != lead {
			urls = append(urls, n.URL())
		}
	}
	url := strings.Join(urls, ",")
	nc, js, err := connect(ctx, url, "dqbench-admin", true)
	if err != nil {
		return nil, fail(fmt.Errorf("%w: %v", brokers.ErrUnreachable, err))
	}
	m := &managed{
		Broker:  &Broker{url: url, settings: settings, nc: nc, js: js, throwaway: owned},
		cluster: cl, owned: owned, lead: cl.Nodes[lead].Name,
	}
	m.failovers.init()
	return m, nil
}

// stopOwned stops a cluster started for the run and forgets its directory.
func stopOwned(cl *cluster.Cluster) error {
	if err := cl.Stop(); err != nil {
		return err
	}
	leftover.Forget(leftover.Entry{Kind: leftover.Dir, Name: cl.Dir})
	return nil
}

// Name says which cluster this is.
func (m *managed) Name() string {
	how := "started for this run"
	if !m.owned {
		how = "started by dqbench brokers up"
	}
	return fmt.Sprintf("nats managed %d-node JetStream cluster (%s): %s", len(m.cluster.Nodes), how, strings.Join(m.cluster.URLs(), " "))
}

// Close waits for the nodes a failover killed to run again (on a standing
// cluster), closes the admin connection and stops the cluster when it was
// started for the run.
func (m *managed) Close() error {
	err := m.failovers.close(m, !m.owned)
	err = errors.Join(err, m.Broker.Close())
	if !m.owned {
		return err
	}
	if serr := stopOwned(m.cluster); serr != nil {
		err = errors.Join(err, fmt.Errorf("%w: stop the managed NATS cluster: %v", brokers.ErrCleanup, serr))
	}
	return err
}

// Open creates the variant's stream and consumer (Broker.Open), then, for
// a replicated stream, places the leaders (leaderOn): every variant's
// stream is led by the node its clients are connected to, so one failover
// meets every variant the same way.
func (m *managed) Open(ctx context.Context, spec brokers.DestinationSpec) (brokers.Destination, error) {
	m.opening.Add(1)
	defer m.opening.Add(-1)
	d, err := m.Broker.Open(ctx, spec)
	if err != nil {
		return nil, err
	}
	md := &managedDest{dest: d.(*dest), m: m, run: ctx}
	if md.settings.Replicas > 1 {
		if err := md.leaderOn(ctx, m.lead); err != nil {
			return nil, errors.Join(err, md.Close(ctx))
		}
	}
	m.opened.Add(1)
	return md, nil
}

// managedDest is a variant's stream on a managed cluster.
type managedDest struct {
	*dest
	m   *managed
	run context.Context // the run's: a failover gives up when it ends (Ctrl-C, deadline)
}

var _ brokers.Powered = (*managedDest)(nil)

// Apply injects the managed cluster's own fault power, a stream leader
// failover, and a stream's (dest.Apply).
func (d *managedDest) Apply(ctx context.Context, p brokers.Power) error {
	switch p := p.(type) {
	case brokers.JoinFailover:
		if d.settings.Replicas < 3 {
			return fmt.Errorf("fault %s fails a stream's leader over to a follower: add replicas: 3 to the broker", p.Fault)
		}
		d.m.failovers.join(p.Fault)
		return nil
	case brokers.StopLeader:
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(d.run, cancel)()
		what, err := d.m.failovers.stop(ctx, d.m, round{p.Fault, p.Intent, p.Attempt}, d, p.StepDown)
		if err == nil {
			p.Stopped(what)
		}
		return err
	}
	return d.dest.Apply(ctx, p)
}

// leaders are the nodes leading a stream and its consumer.
type leaders struct{ stream, consumer string }

// requestWait bounds one JetStream API request on the cluster: a request
// made while a stream's leader is being elected gets no answer at all,
// and would otherwise wait for the whole run.
const requestWait = 2 * time.Second

// Backlog is the stream's backlog (dest.Backlog), each try bounded by
// requestWait: the drain asks again.
func (d *managedDest) Backlog(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, requestWait)
	defer cancel()
	return d.dest.Backlog(ctx)
}

// consumerWait bounds connecting a consumer instance, which a leader
// election can hold up: the runner tries again with a new instance.
const consumerWait = 10 * time.Second

// Consumer connects a consumer instance (dest.Consumer) within
// consumerWait.
func (d *managedDest) Consumer(ctx context.Context, gen int) (brokers.Consumer, error) {
	ctx, cancel := context.WithTimeout(ctx, consumerWait)
	defer cancel()
	return d.dest.Consumer(ctx, gen)
}

// leaders asks for the stream's and its consumer's leaders ("" while none
// is elected).
func (d *managedDest) leaders(ctx context.Context) (leaders, error) {
	ctx, cancel := context.WithTimeout(ctx, requestWait)
	defer cancel()
	st, err := d.b.js.Stream(ctx, d.stream)
	if err != nil {
		return leaders{}, err
	}
	si, err := st.Info(ctx)
	if err != nil {
		return leaders{}, err
	}
	ci, err := d.cons.Info(ctx)
	if err != nil {
		return leaders{}, err
	}
	var l leaders
	if si.Cluster != nil {
		l.stream = si.Cluster.Leader
	}
	if ci.Cluster != nil {
		l.consumer = ci.Cluster.Leader
	}
	return l, nil
}

// alignWait bounds moving a stream's leaders to one node.
const alignWait = 90 * time.Second

// leaderOn makes node lead the stream, and another node lead its
// consumer. JetStream places leaders where its Raft elections fall, and
// nats-server 2.9 takes no preferred node in a step-down, so a leader in
// the wrong place steps down until the election falls right (each picks
// among the other replicas: half the time, with 3, for the stream).
//
// The consumer is led elsewhere so that a failover that kills the
// stream's leader leaves the consumer's state (what was delivered and not
// acked) with its leader: the killed consumer's unacked delivery comes
// back after ack_wait, every time. Killing the consumer's leader too would
// leave it to a new leader's replicated state, which nats-server 2.9.10
// can lose (seen: the unacked message not delivered again, the backlog 0):
// a finding, but not one the same seed reproduces.
func (d *managedDest) leaderOn(ctx context.Context, node string) error {
	ctx, cancel := context.WithTimeout(ctx, alignWait)
	defer cancel()
	var last leaders
	for {
		l, err := d.leaders(ctx)
		if err == nil {
			last = l
			switch {
			case l.stream == node && l.consumer != "" && l.consumer != node:
				return nil
			case l.stream != "" && l.stream != node:
				err = d.stepDown(ctx, "$JS.API.STREAM.LEADER.STEPDOWN."+d.stream)
			case l.consumer == node:
				err = d.stepDown(ctx, "$JS.API.CONSUMER.LEADER.STEPDOWN."+d.stream+"."+durable)
			}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("managed NATS: place the leaders of stream %s (the stream on node %s, its consumer elsewhere): %w (stream led by %q, its consumer by %q; last error: %v)",
				d.stream, node, ctx.Err(), last.stream, last.consumer, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stepDown asks the leader of a stream or consumer (subject: its
// LEADER.STEPDOWN API) to hand over to another replica.
func (d *managedDest) stepDown(ctx context.Context, subject string) error {
	msg, err := d.b.nc.RequestWithContext(ctx, subject, nil)
	if err != nil {
		return err
	}
	var resp struct {
		Success bool `json:"success"`
		Error   *struct {
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return fmt.Errorf("%s: %w", subject, err)
	}
	if resp.Error != nil {
		return fmt.Errorf("%s: %s", subject, resp.Error.Description)
	}
	return nil
}
