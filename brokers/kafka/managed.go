package kafka

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/brokers/kafka/cluster"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/internal/private"
	"github.com/dqbench/dqbench/leftover"
)

// throwawayPrefix names the temporary directories of run clusters.
const throwawayPrefix = "dqbench-kafka-cluster-"

// standingNodes is the size of the cluster "dqbench brokers up kafka"
// leaves running: what a managed run asks for by default.
const standingNodes = 1

// managedCluster is a real Apache Kafka dqbench runs (mode: managed).
type managedCluster struct {
	c     *cluster.Cluster
	owned bool // started for this run: Close stops it
	// lead leads every partition of the run on a three-node cluster
	// (createTopic), which a leader-failover kills (failover.go).
	lead      int32
	failovers failovers
}

// acquire returns the cluster "dqbench brokers up kafka" left running,
// when every node of it runs and it has the nodes, transaction.version and
// replica lag the scenario asks for, or starts a throwaway one in a new temporary
// directory (owned: the caller stops it; its processes die with this
// one).
func acquire(ctx context.Context, opts cluster.Options) (c *cluster.Cluster, owned bool, err error) {
	if opts.TransactionVersion == 0 {
		opts.TransactionVersion = 2
	}
	if c, err := cluster.Load(cluster.StateDir()); err == nil && c.Healthy() && len(c.Nodes) == opts.Nodes &&
		c.TransactionVersion == opts.TransactionVersion && c.ReplicaLag == opts.ReplicaLag {
		return c, false, nil
	}
	if _, err := cluster.FindInstall(); err != nil {
		return nil, false, fmt.Errorf("%w: mode: managed starts Apache Kafka from its jars: %v; or use mode: embedded, or mode: external with your cluster's addresses", brokers.ErrUnreachable, err)
	}
	_, _ = SweepClusters()
	dir, err := leftover.MkdirTemp(throwawayPrefix)
	if err != nil {
		return nil, false, fmt.Errorf("managed Kafka: %w", err)
	}
	opts.Dir, opts.Owned = dir, true
	c, err = cluster.Start(ctx, opts)
	if err != nil {
		if os.RemoveAll(dir) == nil {
			leftover.Forget(leftover.Entry{Kind: leftover.Dir, Name: dir})
		}
		if ctx.Err() != nil {
			return nil, false, fmt.Errorf("start a managed Kafka cluster: %w", ctx.Err())
		}
		return nil, false, fmt.Errorf("%w: start a managed Kafka cluster: %v", brokers.ErrUnreachable, err)
	}
	return c, true, nil
}

// openManaged connects to a managed cluster, starting one unless "dqbench
// brokers up kafka" left a matching one running.
func openManaged(ctx context.Context, settings *catalog.KafkaSettings) (*Kafka, error) {
	c, owned, err := acquire(ctx, cluster.Options{Nodes: max(settings.Brokers, 1), TransactionVersion: settings.TransactionVersion, ReplicaLag: settings.ReplicaLag.D()})
	if err != nil {
		return nil, err
	}
	k, err := Connect(ctx, c.Addrs())
	if err != nil {
		if owned {
			err = errors.Join(err, stopOwned(c))
		}
		return nil, err
	}
	k.managed = &managedCluster{c: c, owned: owned}
	if len(c.Nodes) >= 3 {
		if k.managed.lead, err = k.chooseLead(ctx); err != nil {
			return nil, errors.Join(fmt.Errorf("%w: managed Kafka: %v", brokers.ErrUnreachable, err), k.Close())
		}
	}
	return k, nil
}

// stopOwned stops a cluster started for the run and forgets its directory.
func stopOwned(c *cluster.Cluster) error {
	if err := c.Stop(); err != nil {
		return err
	}
	leftover.Forget(leftover.Entry{Kind: leftover.Dir, Name: c.Dir})
	return nil
}

// name says which cluster this is.
func (m *managedCluster) name() string {
	how := "started for this run"
	if !m.owned {
		how = "started by dqbench brokers up"
	}
	return fmt.Sprintf("kafka managed %d-node KRaft cluster (Apache Kafka %s, transaction.version %d, %s): %s",
		len(m.c.Nodes), m.c.Install.Version, m.c.TransactionVersion, how, strings.Join(m.c.Addrs(), ","))
}

// close stops the cluster when it was started for the run.
func (m *managedCluster) close() error {
	if !m.owned {
		return nil
	}
	if err := stopOwned(m.c); err != nil {
		return fmt.Errorf("%w: stop the managed Kafka cluster: %v", brokers.ErrCleanup, err)
	}
	return nil
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

// Up starts the cluster that runs with mode: managed reuse, in
// cluster.StateDir, unless every node of one runs there already (running:
// true). A cluster there with a dead node is stopped and started afresh.
func Up(ctx context.Context, starting func()) (c *cluster.Cluster, running bool, err error) {
	dir := cluster.StateDir()
	if err := brokers.CheckStanding(dir); err != nil {
		return nil, false, err
	}
	if old, err := cluster.Load(dir); err == nil {
		if old.Healthy() {
			return old, true, nil
		}
		if err := old.Stop(); err != nil {
			return nil, false, fmt.Errorf("stop the broken cluster in %s: %w", dir, err)
		}
	}
	if _, err := cluster.FindInstall(); err != nil {
		return nil, false, err
	}
	_, _ = SweepClusters()
	if err := os.RemoveAll(dir); err != nil {
		return nil, false, err
	}
	if err := private.MkdirAll(dir); err != nil {
		return nil, false, err
	}
	starting()
	c, err = cluster.Start(ctx, cluster.Options{Dir: dir, Nodes: standingNodes})
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, fmt.Errorf("start a managed Kafka cluster: %w", ctx.Err())
		}
		return nil, false, fmt.Errorf("%w: start a managed Kafka cluster: %v", brokers.ErrUnreachable, err)
	}
	return c, false, nil
}

// ErrNoCluster: "dqbench brokers up kafka" has no cluster running.
var ErrNoCluster = errors.New("no managed Kafka cluster is running (start one with \"dqbench brokers up kafka\")")

// Down stops the cluster Up started and removes its directory.
func Down() (*cluster.Cluster, error) {
	c, err := Status()
	if err != nil {
		return nil, err
	}
	return c, c.Stop()
}

// Status reads the cluster Up started; ErrNoCluster when there is none.
func Status() (*cluster.Cluster, error) {
	c, err := cluster.Load(cluster.StateDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoCluster
	}
	return c, err
}

// Standing is the cluster "dqbench brokers up kafka" leaves running for
// runs with mode: managed.
var Standing = brokers.Standing{
	Name: "kafka",
	Noun: "cluster",
	Doc: fmt.Sprintf("a throwaway one-node Apache Kafka %s in KRaft mode (broker and controller in one JVM) from the jars "+
		"\"dqbench brokers fetch kafka\" copies from Maven Central (or $KAFKA_HOME/libs), its own ports on 127.0.0.1 and directory; "+
		"a Kafka already running on the machine is not touched: runs with mode: managed and brokers: 1 reuse it and skip the cluster's start "+
		"(3 nodes, or transaction_version: 1, start their own).", cluster.Version),
	Starting: "starting a one-node Apache Kafka (KRaft) from its jars (about 3 s)...",
	Use: func(_ brokers.StandingState, down string) string {
		return fmt.Sprintf("Runs with mode: managed (one node) use it until %q.", down)
	},
	Up: func(ctx context.Context, starting func()) (brokers.StandingState, bool, error) {
		c, running, err := Up(ctx, starting)
		if err != nil {
			return brokers.StandingState{}, false, err
		}
		return standingState(c, true), running, nil
	},
	Down:    standingDown,
	Status:  standingStatus,
	Orphans: OrphanClusters,
	Fetch:   cluster.Fetch,
}

// standingDown and standingStatus are Standing's, from Down and Status.
var standingDown, standingStatus = brokers.StandingCalls(Down, Status, ErrNoCluster, standingState)

// standingState describes c; probe: ask each node whether it runs.
func standingState(c *cluster.Cluster, probe bool) brokers.StandingState {
	st := brokers.StandingState{Dir: c.Dir, Started: c.Started, StartDur: c.StartDur}
	if !probe {
		for _, n := range c.Nodes {
			st.Nodes = append(st.Nodes, brokers.StandingNode{Name: n.Name, URL: n.Addr()})
		}
		return st
	}
	for _, n := range c.Status() {
		st.Nodes = append(st.Nodes, brokers.StandingNode{Name: n.Name, Running: n.Running, URL: n.Addr()})
	}
	return st
}
