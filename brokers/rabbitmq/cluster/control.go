package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/brokers/localcluster"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/internal/private"
)

// StateDir is the well-known directory of the cluster "dqbench brokers up"
// starts, found by later runs with mode: managed and by "brokers down":
// $XDG_RUNTIME_DIR/dqbench-brokers/rabbitmq when set, else under the
// system's temporary directory. Run by root, the nodes run as the rabbitmq
// user, who cannot enter root's XDG_RUNTIME_DIR (mode 0700): then it is
// the one under the temporary directory.
func StateDir() string {
	as, err := lookupRunAs()
	if err != nil {
		return brokers.StandingDir(string(catalog.RabbitMQ))
	}
	return stateDir(as)
}

func stateDir(as runAs) string {
	dir := brokers.StandingDir(string(catalog.RabbitMQ))
	// Up makes dqbench-brokers/rabbitmq enterable: what is above is not its.
	if as.reach(filepath.Dir(filepath.Dir(dir))) != nil {
		return filepath.Join(os.TempDir(), "dqbench-brokers", string(catalog.RabbitMQ))
	}
	return dir
}

const stateFile = "state.json"

// save writes the state file, so that a cluster can be found and stopped
// by another dqbench process.
func (c *Cluster) save() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(c.Dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil { // it holds the cookie
		return fmt.Errorf("write cluster state: %w", err)
	}
	return os.Rename(tmp, filepath.Join(c.Dir, stateFile))
}

// NodesUID is the uid the nodes run as when it is not the user's (root
// runs them as rabbitmq, and prepare gives that user the directory), for
// the checks of who may own a cluster's directory.
func NodesUID() []int {
	if as, err := lookupRunAs(); err == nil && as.cred != nil {
		return []int{as.uid}
	}
	return nil
}

// Load reads the cluster whose state file is in dir; it returns
// os.ErrNotExist when there is none, and an error wrapping
// private.ErrNotPrivate when dir or its state file is not the user's
// alone (dir may belong to the user the nodes run as) or the state names
// another directory.
func Load(dir string) (*Cluster, error) {
	b, err := localcluster.ReadState(dir, NodesUID()...)
	if err != nil {
		return nil, err
	}
	c := new(Cluster)
	if err := json.Unmarshal(b, c); err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(dir, stateFile), err)
	}
	if err := localcluster.InDir(dir, c.Dir); err != nil {
		return nil, err
	}
	return c, nil
}

// NodeStatus is what Status says about one node.
type NodeStatus struct {
	Node
	Running bool // its process lives and it accepts AMQP connections
}

// Status says which nodes run.
func (c *Cluster) Status() []NodeStatus {
	c.mu.Lock()
	nodes := append([]Node(nil), c.Nodes...)
	c.mu.Unlock()
	out := make([]NodeStatus, len(nodes))
	for i, n := range nodes {
		out[i] = NodeStatus{Node: n, Running: c.groupRuns(n.PID) && listening(n.AMQPPort)}
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

func listening(port int) bool {
	conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// Stop kills every process of the cluster (each node's process group and
// epmd), waits until they are gone and removes the directory.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	pids := []int{c.EPMDPID}
	for _, n := range c.Nodes {
		pids = append(pids, n.PID)
	}
	c.mu.Unlock()
	var errs []error
	for _, pid := range pids {
		if err := c.killGroup(pid); err != nil {
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

// killGroup SIGKILLs the process group pid leads, when a process of this
// cluster is in it (a pid from an old state file may belong to another
// program by now), and waits until every member is gone.
func (c *Cluster) killGroup(pid int) error {
	if !c.groupRuns(pid) {
		return nil
	}
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill process group %d: %w", pid, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(groupMembers(pid)) > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("process group %d still runs 10s after SIGKILL", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// groupRuns reports whether a live process of this cluster is in the
// process group pid leads.
func (c *Cluster) groupRuns(pid int) bool {
	if pid <= 1 { // never init's group, nor -1 (every process)
		return false
	}
	home := []byte("HOME=" + filepath.Join(c.Dir, "home") + "\x00")
	for _, m := range groupMembers(pid) {
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", m))
		if err == nil && bytes.Contains(append([]byte{0}, env...), append([]byte{0}, home...)) {
			return true
		}
	}
	return false
}

// groupMembers lists the live (not zombie) processes in process group pgid.
func groupMembers(pgid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		// After the command: state, ppid, pgrp.
		f := strings.Fields(s[i+1:])
		if len(f) < 3 || f[0] == "Z" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid {
			out = append(out, pid)
		}
	}
	return out
}

// Kill stops node i as a crash does: SIGKILL to its process group, no
// goodbye to the other nodes or the clients.
func (c *Cluster) Kill(i int) error {
	c.mu.Lock()
	pid := c.Nodes[i].PID
	c.Nodes[i].PID = 0
	c.mu.Unlock()
	if err := c.killGroup(pid); err != nil {
		return err
	}
	return c.save()
}

// Freeze stops node i's processes where they are (SIGSTOP to its process
// group): the node reads nothing more from its sockets and writes nothing
// more to disk, so whatever a client sends it from now on is certainly not
// stored when Kill follows.
func (c *Cluster) Freeze(i int) error {
	c.mu.Lock()
	pid := c.Nodes[i].PID
	c.mu.Unlock()
	if !c.groupRuns(pid) {
		return fmt.Errorf("node %s does not run", c.Nodes[i].Name)
	}
	if err := syscall.Kill(-pid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("freeze process group %d: %w", pid, err)
	}
	return nil
}

// SyncMetadata makes node i write its metadata store's log to disk
// (Mnesia's mnesia:sync_log()): RabbitMQ 3.x answers a queue.declare once
// the queue's record is committed to Mnesia, whose transaction log is not
// flushed at commit, so a node killed right after a declare (a third of a
// second, in a run that saw it) can start again without the durable
// queue: its messages, written and confirmed, are then dropped with it.
// A node without Mnesia (RabbitMQ 4's Khepri, which writes before it
// answers) has nothing to sync.
func (c *Cluster) SyncMetadata(ctx context.Context, i int) error {
	in, err := findInstall()
	if err != nil {
		return err
	}
	as, err := lookupRunAs()
	if err != nil {
		return err
	}
	out, err := c.ctl(ctx, in, as, i, "rabbitmqctl", "eval", "mnesia:sync_log().")
	if err != nil {
		return err
	}
	switch out = strings.TrimSpace(out); {
	case out == "ok", strings.Contains(out, "node_not_running"):
		return nil
	}
	return fmt.Errorf("mnesia:sync_log() on %s: %s", c.Nodes[i].Name, out)
}

// Restart starts node i again after Kill; it rejoins the cluster by itself
// (its data directory remembers the cluster). It returns once the node
// accepts AMQP connections.
func (c *Cluster) Restart(ctx context.Context, i int) error {
	in, err := findInstall()
	if err != nil {
		return err
	}
	as, err := lookupRunAs()
	if err != nil {
		return err
	}
	if err := c.startNode(ctx, in, as, i); err != nil {
		return err
	}
	return c.awaitStartup(ctx, in, as, i)
}

// awaitStartup waits until node i has finished booting: its AMQP port opens
// before the boot is over, and a connection accepted meanwhile can be
// reset.
func (c *Cluster) awaitStartup(ctx context.Context, in install, as runAs, i int) error {
	_, err := c.ctl(ctx, in, as, i, "rabbitmqctl", "await_startup", "--timeout", "60")
	return err
}

// Index returns the index of the node named name, or -1.
func (c *Cluster) Index(name string) int {
	for i, n := range c.Nodes {
		if n.Name == name {
			return i
		}
	}
	return -1
}

// Leader asks a running node which node leads quorum queue queue (vhost
// "/"), with rabbitmqctl list_queues (no management plugin).
func (c *Cluster) Leader(ctx context.Context, queue string) (string, error) {
	in, err := findInstall()
	if err != nil {
		return "", err
	}
	as, err := lookupRunAs()
	if err != nil {
		return "", err
	}
	var errs []error
	for i, s := range c.Status() {
		if !s.Running {
			continue
		}
		out, err := c.ctl(ctx, in, as, i, "rabbitmqctl", "list_queues", "--quiet", "--formatter", "json", "name", "leader")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var qs []struct {
			Name   string `json:"name"`
			Leader string `json:"leader"`
		}
		if err := json.Unmarshal([]byte(jsonPart(out)), &qs); err != nil {
			return "", fmt.Errorf("read list_queues: %v: %s", err, out)
		}
		for _, q := range qs {
			if q.Name == queue {
				if q.Leader == "" {
					return "", fmt.Errorf("queue %s has no leader (is it a quorum queue?)", queue)
				}
				return q.Leader, nil
			}
		}
		return "", fmt.Errorf("no queue %s on the cluster", queue)
	}
	if len(errs) == 0 {
		return "", errors.New("no node of the cluster runs")
	}
	return "", errors.Join(errs...)
}

// Running reports whether any process of c (a node, epmd) is still alive.
func Running(c *Cluster) bool {
	pids := []int{c.EPMDPID}
	for _, n := range c.Nodes {
		pids = append(pids, n.PID)
	}
	for _, pid := range pids {
		if c.groupRuns(pid) {
			return true
		}
	}
	return false
}

// Sweep stops the throwaway clusters in the directories that match glob
// (os.TempDir()/dqbench-rabbitmq-*) whose owner process is gone: a run
// killed with SIGKILL cannot stop its own cluster, so the next one does.
// It returns the directories of the clusters it stopped.
func Sweep(glob string) ([]string, error) {
	dirs, err := filepath.Glob(glob)
	if err != nil {
		return nil, err
	}
	var errs []error
	var stopped []string
	for _, dir := range dirs {
		c, err := Load(dir)
		if errors.Is(err, private.ErrNotPrivate) {
			errs = append(errs, fmt.Errorf("left alone: %w", err))
			continue
		}
		if err != nil || c.Owner <= 0 || ownerAlive(c.Owner) {
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
	dirs, _ := filepath.Glob(glob)
	var out []string
	for _, dir := range dirs {
		if c, err := Load(dir); err == nil && c.Owner > 0 && !ownerAlive(c.Owner) {
			out = append(out, dir)
		}
	}
	return out
}

// ownerAlive reports whether process pid runs (a dqbench that owns a
// cluster).
func ownerAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
