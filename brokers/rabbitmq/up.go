package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/brokers/rabbitmq/cluster"
)

// ErrNoCluster: "dqbench brokers up rabbitmq" has no cluster running.
var ErrNoCluster = errors.New("no managed RabbitMQ cluster is running (start one with \"dqbench brokers up rabbitmq\")")

// Up starts the managed cluster that runs with mode: managed reuse, in
// cluster.StateDir, unless every node of one runs there already (running:
// true). A cluster there with a dead node is stopped and started afresh.
// starting is called before a start.
func Up(ctx context.Context, starting func()) (c *cluster.Cluster, running bool, err error) {
	dir := cluster.StateDir()
	if err := brokers.CheckStanding(dir, cluster.NodesUID()...); err != nil {
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
	if !cluster.Installed() {
		return nil, false, ErrNotInstalled
	}
	_, _ = SweepClusters()
	if err := os.RemoveAll(dir); err != nil {
		return nil, false, err
	}
	// The nodes' user must reach the directory: make the parents
	// traversable (they are dqbench's own).
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, false, fmt.Errorf("cluster directory: %w", err)
	}
	_ = os.Chmod(dir, 0o755)
	_ = os.Chmod(filepath.Dir(dir), 0o755)
	starting()
	c, err = cluster.Start(ctx, cluster.Options{Dir: dir})
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, fmt.Errorf("start a managed RabbitMQ cluster: %w", ctx.Err())
		}
		if errors.Is(err, cluster.ErrNoAccess) {
			return nil, false, fmt.Errorf("start a managed RabbitMQ cluster: %w", err) // not unreachable: it never started
		}
		return nil, false, fmt.Errorf("%w: start a managed RabbitMQ cluster: %v", brokers.ErrUnreachable, err)
	}
	return c, false, nil
}

// Down stops the cluster Up started and removes its directory.
func Down() (*cluster.Cluster, error) {
	c, err := cluster.Load(cluster.StateDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoCluster
	}
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

// Standing is the cluster "dqbench brokers up rabbitmq" leaves running for
// runs with mode: managed.
var Standing = brokers.Standing{
	Name: "rabbitmq",
	Noun: "cluster",
	Doc: "a throwaway 3-node cluster from rabbitmq-server (own node names, ports and Erlang cookie; " +
		"a RabbitMQ already running on the machine is not touched): runs with mode: managed reuse it " +
		"and skip the cluster's start.",
	Starting: "starting a 3-node RabbitMQ cluster from rabbitmq-server (about 20-30 s)...",
	Use: func(_ brokers.StandingState, down string) string {
		return fmt.Sprintf("Runs with mode: managed use it until %q (user and password: guest).", down)
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
}

// standingDown and standingStatus are Standing's, from Down and Status.
var standingDown, standingStatus = brokers.StandingCalls(Down, Status, ErrNoCluster, standingState)

// standingState describes c; probe: ask each node whether it runs (else
// every node counts as stopped).
func standingState(c *cluster.Cluster, probe bool) brokers.StandingState {
	st := brokers.StandingState{Dir: c.Dir, Started: c.Started, StartDur: c.StartDur}
	if !probe {
		for _, n := range c.Nodes {
			st.Nodes = append(st.Nodes, brokers.StandingNode{Name: n.Name, URL: n.URL()})
		}
		return st
	}
	for _, n := range c.Status() {
		st.Nodes = append(st.Nodes, brokers.StandingNode{Name: n.Name, Running: n.Running, URL: n.URL()})
	}
	return st
}
