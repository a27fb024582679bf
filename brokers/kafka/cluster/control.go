package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/dqbench/dqbench/brokers/localcluster"
)

// NodeStatus is what Status says about one node.
type NodeStatus struct {
	Node
	Running bool // its process lives and it accepts client connections
}

// Status says which nodes run.
func (c *Cluster) Status() []NodeStatus {
	c.mu.Lock()
	nodes := append([]Node(nil), c.Nodes...)
	c.mu.Unlock()
	out := make([]NodeStatus, len(nodes))
	for i, n := range nodes {
		out[i] = NodeStatus{Node: n, Running: localcluster.Ours(n.PID, c.Dir) && localcluster.Listening(n.Port)}
	}
	return out
}

// Healthy reports whether every node runs.
func (c *Cluster) Healthy() bool {
	for _, s := range c.Status() {
		if !s.Running {
			return false
		}
	}
	return len(c.Nodes) > 0
}

// Stop kills every node (SIGKILL to its process group), waits until they
// are gone and removes the directory.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	var pids []int
	for _, n := range c.Nodes {
		pids = append(pids, n.PID)
	}
	c.mu.Unlock()
	var errs []error
	for _, pid := range pids {
		if err := c.kill(pid); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Dir != "" {
		if err := os.RemoveAll(c.Dir); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", c.Dir, err))
		}
	}
	return errors.Join(errs...)
}

func (c *Cluster) kill(pid int) error {
	c.mu.Lock()
	exited := c.exited[pid]
	c.mu.Unlock()
	// SIGKILL ends a frozen (SIGSTOPped) node too.
	return localcluster.KillGroup(pid, c.Dir, exited)
}

// Kill stops node i as a crash does: SIGKILL, no goodbye to the other
// nodes or the clients. It returns the pid it killed.
func (c *Cluster) Kill(i int) (int, error) {
	c.mu.Lock()
	pid := c.Nodes[i].PID
	c.Nodes[i].PID = 0
	c.mu.Unlock()
	if err := c.kill(pid); err != nil {
		return pid, err
	}
	return pid, c.save()
}

// Freeze stops node i with SIGSTOP: it holds its connections and answers
// nothing, as a node in a long pause does, until Thaw.
func (c *Cluster) Freeze(i int) (int, error) {
	c.mu.Lock()
	pid := c.Nodes[i].PID
	c.mu.Unlock()
	return pid, localcluster.Signal(pid, c.Dir, syscall.SIGSTOP)
}

// Thaw lets a frozen node i run again (SIGCONT).
func (c *Cluster) Thaw(i int) error {
	c.mu.Lock()
	pid := c.Nodes[i].PID
	c.mu.Unlock()
	return localcluster.Signal(pid, c.Dir, syscall.SIGCONT)
}

// Restart starts node i again after Kill, on the same ports and data
// directory: it rejoins the quorum and catches up. It returns once the
// cluster is ready again.
func (c *Cluster) Restart(ctx context.Context, i int) error {
	if err := c.startNode(ctx, i); err != nil {
		return err
	}
	return c.WaitReady(ctx, time.Minute)
}

// Index returns the index of the node with node.id id, or -1.
func (c *Cluster) Index(id int32) int {
	for i, n := range c.Nodes {
		if n.ID == id {
			return i
		}
	}
	return -1
}

// Running reports whether any node of c is still alive.
func Running(c *Cluster) bool {
	for _, n := range c.Nodes {
		if localcluster.Ours(n.PID, c.Dir) {
			return true
		}
	}
	return false
}

// Sweep stops the throwaway clusters in the directories that match glob
// whose owner process is gone (their nodes die with it; this is for a
// platform without Pdeathsig, or a node that outlived it), and returns
// their directories.
func Sweep(glob string) ([]string, error) {
	orphans, errs := orphans(glob)
	var stopped []string
	for _, dir := range orphans {
		c, err := Load(dir)
		if err != nil {
			continue
		}
		if err := c.Stop(); err != nil {
			errs = append(errs, err)
			continue
		}
		stopped = append(stopped, dir)
	}
	return stopped, errors.Join(errs...)
}

// Orphans lists the directories matching glob of throwaway clusters whose
// owner process is gone: what Sweep would stop.
func Orphans(glob string) []string {
	out, _ := orphans(glob)
	return out
}

// orphans is Orphans, and the directories left alone because they are
// not the user's alone, each with why.
func orphans(glob string) ([]string, []error) {
	return localcluster.Orphans(glob, func(dir string) (int, error) {
		c, err := Load(dir)
		if err != nil {
			return 0, err
		}
		return c.Owner, nil
	})
}
