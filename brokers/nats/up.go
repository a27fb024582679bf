package nats

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/brokers/nats/cluster"
	"github.com/dqbench/dqbench/internal/private"
)

// Up starts the managed cluster that runs with mode: managed reuse, in
// cluster.StateDir, unless every node of one runs there already (running:
// true). A cluster there with a dead node is stopped and started afresh.
// starting is called before a start.
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
	if !cluster.Installed() {
		return nil, false, ErrNotInstalled
	}
	_, _ = SweepClusters()
	if err := os.RemoveAll(dir); err != nil {
		return nil, false, err
	}
	if err := private.MkdirAll(dir); err != nil {
		return nil, false, err
	}
	starting()
	c, err = cluster.Start(ctx, cluster.Options{Dir: dir})
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, fmt.Errorf("start a managed NATS cluster: %w", ctx.Err())
		}
		return nil, false, fmt.Errorf("%w: start a managed NATS cluster: %v", brokers.ErrUnreachable, err)
	}
	return c, false, nil
}

// ErrNoCluster: "dqbench brokers up nats" has no cluster running.
var ErrNoCluster = errors.New("no managed NATS cluster is running (start one with \"dqbench brokers up nats\")")

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

// Standing is the cluster "dqbench brokers up nats" leaves running for
// runs with mode: managed.
var Standing = brokers.Standing{
	Name: "nats",
	Noun: "cluster",
	Doc: "a throwaway 3-node JetStream cluster from the installed nats-server (own server names, " +
		"client, route and monitoring ports on 127.0.0.1, store directories; the NATS already running " +
		"on the machine is not touched): runs with mode: managed reuse it and skip the cluster's start.",
	Starting: "starting a 3-node NATS JetStream cluster from nats-server (about 1-2 s)...",
	Use: func(_ brokers.StandingState, down string) string {
		return fmt.Sprintf("Runs with mode: managed use it until %q; a node a leader-failover kills is restarted when the run ends.", down)
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
