// Package cluster starts, finds and stops a throwaway JetStream cluster of
// local nats-server processes from the installed binary: each node has its
// own server name, client and route ports on 127.0.0.1, configuration and
// store directory, all in one directory, so that a NATS already running on
// the machine (the system one at 4222) is never touched.
//
// A cluster is described by its state file (state.json in its directory):
// "dqbench brokers up nats" leaves one in a well-known directory
// (brokers.StandingDir("nats")), so later runs and "dqbench brokers down
// nats" find it. A run's own cluster (Options.Owned) has its processes in
// process groups that die with dqbench (Pdeathsig), and its directory in
// the leftover ledger.
package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/brokers/localcluster"
	"github.com/dqbench/dqbench/catalog"
)

// ErrNotInstalled: the nats-server binary was not found on this machine.
var ErrNotInstalled = errors.New("nats-server is not installed")

// Size is the number of nodes of a cluster.
const Size = catalog.ManagedNATSNodes

// BinEnv names the environment variable that says where the nats-server
// binary is, instead of looking on PATH.
const BinEnv = "DQBENCH_NATS_SERVER"

// Binary finds nats-server: $DQBENCH_NATS_SERVER when set, else on PATH,
// else where Debian and Homebrew put it.
func Binary() (string, error) {
	if p := os.Getenv(BinEnv); p != "" {
		if isExec(p) {
			return p, nil
		}
		return "", fmt.Errorf("%w at %s=%s", ErrNotInstalled, BinEnv, p)
	}
	if p, err := exec.LookPath("nats-server"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/nats-server", "/usr/local/bin/nats-server", "/opt/homebrew/bin/nats-server"} {
		if isExec(p) {
			return p, nil
		}
	}
	return "", ErrNotInstalled
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// Installed reports whether nats-server is installed.
func Installed() bool {
	_, err := Binary()
	return err == nil
}

// Cluster is a set of local nats-server processes joined by routes into
// one JetStream cluster.
type Cluster struct {
	// Dir holds everything the cluster writes, and its state file.
	Dir string `json:"dir"`
	// ID makes the cluster's and its nodes' names unique on the machine.
	ID    string `json:"id"`
	Bin   string `json:"bin"`
	Nodes []Node `json:"nodes"`
	// Owner is the pid of the dqbench process whose run the cluster is
	// (its processes die with it); 0 for one "brokers up" left.
	Owner int `json:"owner,omitempty"`
	// Started is when the cluster was up, and how long starting it took.
	Started  time.Time     `json:"started"`
	StartDur time.Duration `json:"start_duration"`

	mu     sync.Mutex // guards Nodes[i].PID, exited and the state file
	exited map[int]<-chan struct{}
}

// Node is one nats-server of a cluster.
type Node struct {
	Name       string `json:"name"` // its server_name, as JetStream reports leaders
	ClientPort int    `json:"client_port"`
	RoutePort  int    `json:"route_port"`
	// MonitorPort serves the node's HTTP monitoring (/jsz: the meta
	// leader).
	MonitorPort int `json:"monitor_port"`
	// PID leads the node's process group; 0 while stopped.
	PID int `json:"pid"`
}

// URL is the node's client URL.
func (n Node) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.ClientPort) }

// URLs lists every node's client URL, the first node first.
func (c *Cluster) URLs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.URL()
	}
	return out
}

// Options say what cluster to start.
type Options struct {
	// Dir is the cluster's directory; it is created, and removed by Stop.
	Dir string
	// Owned: the cluster is this run's: its processes die with this
	// process (Pdeathsig) and a later Sweep stops what is left of it.
	// Otherwise they get their own session and outlive it (brokers up).
	Owned bool
}

// Start starts a cluster of Size nodes, in parallel, and waits until
// JetStream has elected its meta leader and every node answers. On failure
// or when ctx ends it stops whatever it started and removes the directory.
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	began := time.Now()
	c = &Cluster{Dir: opts.Dir, ID: localcluster.RandomHex(3), Bin: bin}
	if opts.Owned {
		c.Owner = os.Getpid()
	}
	defer func() {
		if err != nil {
			_ = c.Stop()
		}
	}()
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return c, fmt.Errorf("cluster directory: %w", err)
	}
	ports, err := localcluster.FreePorts(3 * Size)
	if err != nil {
		return c, err
	}
	for i := range Size {
		c.Nodes = append(c.Nodes, Node{
			Name:       fmt.Sprintf("n%d", i+1),
			ClientPort: ports[3*i], RoutePort: ports[3*i+1], MonitorPort: ports[3*i+2],
		})
	}
	for i := range c.Nodes {
		if err := c.writeConf(i); err != nil {
			return c, err
		}
	}
	if err := c.save(); err != nil {
		return c, err
	}
	errs := make([]error, Size)
	var wg sync.WaitGroup
	for i := range c.Nodes {
		wg.Go(func() { errs[i] = c.startNode(ctx, i) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return c, err
	}
	if err := c.WaitReady(ctx, time.Minute); err != nil {
		return c, err
	}
	c.Started = time.Now()
	c.StartDur = time.Since(began)
	return c, c.save()
}

func (c *Cluster) nodeDir(i int) string { return filepath.Join(c.Dir, c.Nodes[i].Name) }

func (c *Cluster) confPath(i int) string { return filepath.Join(c.nodeDir(i), "nats.conf") }

// writeConf writes node i's configuration: loopback ports, its own store
// directory, routes to every node.
func (c *Cluster) writeConf(i int) error {
	n := c.Nodes[i]
	dir := c.nodeDir(i)
	if err := os.MkdirAll(filepath.Join(dir, "store"), 0o700); err != nil {
		return fmt.Errorf("node directory: %w", err)
	}
	routes := make([]string, len(c.Nodes))
	for j, m := range c.Nodes {
		routes[j] = fmt.Sprintf("nats://127.0.0.1:%d", m.RoutePort)
	}
	conf := fmt.Sprintf(`# dqbench managed NATS cluster %s, node %s
server_name: %s
listen: 127.0.0.1:%d
http: 127.0.0.1:%d
log_file: %q
jetstream {
  store_dir: %q
  max_memory_store: 256MB
  max_file_store: 1GB
}
cluster {
  name: dqbench-%s
  listen: 127.0.0.1:%d
  routes: [%s]
}
`, c.ID, n.Name, n.Name, n.ClientPort, n.MonitorPort, filepath.Join(dir, "nats.log"), filepath.Join(dir, "store"),
		c.ID, n.RoutePort, strings.Join(routes, ", "))
	return os.WriteFile(c.confPath(i), []byte(conf), 0o600)
}

// startNode starts node i and waits until it accepts client connections.
// A run's node is in its own process group and is killed when dqbench
// dies (Pdeathsig); a standing one has its own session.
func (c *Cluster) startNode(ctx context.Context, i int) error {
	cmd := exec.Command(c.Bin, "-c", c.confPath(i))
	cmd.Dir = c.Dir
	exited, err := localcluster.Start(cmd, c.Owner > 0)
	if err != nil {
		return fmt.Errorf("start NATS node %s: %w", c.Nodes[i].Name, err)
	}
	c.mu.Lock()
	c.Nodes[i].PID = cmd.Process.Pid
	if c.exited == nil {
		c.exited = map[int]<-chan struct{}{}
	}
	c.exited[cmd.Process.Pid] = exited
	c.mu.Unlock()
	if err := c.save(); err != nil {
		return err
	}
	if err := localcluster.WaitPort(ctx, c.Nodes[i].ClientPort, 30*time.Second, exited); err != nil {
		return fmt.Errorf("NATS node %s did not start: %w%s", c.Nodes[i].Name, err, localcluster.Tail(filepath.Join(c.nodeDir(i), "nats.log")))
	}
	return nil
}

// WaitReady waits (at most limit) until JetStream answers on every running
// node: the meta leader is elected, and every node knows it and the
// cluster's size.
func (c *Cluster) WaitReady(ctx context.Context, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for _, s := range c.Status() {
		if !s.Running {
			continue
		}
		err := waitJetStream(ctx, s.URL())
		for err == nil {
			var m meta
			if m, err = c.jsz(ctx, s.Node); err == nil && m.Leader != "" && m.Size == len(c.Nodes) {
				break
			}
			select {
			case <-ctx.Done():
				err = fmt.Errorf("no meta leader, or not every node known (%+v): %w", m, ctx.Err())
			case <-time.After(100 * time.Millisecond):
				err = nil
			}
		}
		if err != nil {
			return fmt.Errorf("NATS node %s: JetStream not ready: %w%s", s.Name, err, localcluster.Tail(filepath.Join(c.Dir, s.Name, "nats.log")))
		}
	}
	return nil
}

// meta is what a node's /jsz says of the JetStream meta group.
type meta struct {
	Leader string `json:"leader"`
	Size   int    `json:"cluster_size"`
}

// jsz asks node n's monitoring port for the meta group.
func (c *Cluster) jsz(ctx context.Context, n Node) (meta, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/jsz", n.MonitorPort), nil)
	if err != nil {
		return meta{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return meta{}, err
	}
	defer resp.Body.Close()
	var info struct {
		Meta *meta `json:"meta_cluster"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil {
		return meta{}, fmt.Errorf("read /jsz of %s: %w", n.Name, err)
	}
	if info.Meta == nil {
		return meta{}, fmt.Errorf("/jsz of %s: no meta_cluster", n.Name)
	}
	return *info.Meta, nil
}

// MetaLeader is the name of the node leading the JetStream meta group (the
// cluster's API: stream and consumer creation, account info), as the
// first running node answering says.
func (c *Cluster) MetaLeader(ctx context.Context) (string, error) {
	var errs []error
	for _, s := range c.Status() {
		if !s.Running {
			continue
		}
		m, err := c.jsz(ctx, s.Node)
		if err == nil && m.Leader != "" {
			return m.Leader, nil
		}
		errs = append(errs, err)
	}
	return "", fmt.Errorf("no node says which leads the JetStream meta group: %w", errors.Join(errs...))
}

// waitJetStream waits until $JS.API.INFO answers through url: in a
// cluster, only once the meta leader is elected.
func waitJetStream(ctx context.Context, url string) error {
	nc, err := nats.Connect(url, nats.Name("dqbench-cluster-wait"), nats.Timeout(2*time.Second), nats.NoReconnect())
	if err != nil {
		return err
	}
	defer nc.Close()
	var last error
	for {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		msg, err := nc.RequestWithContext(rctx, "$JS.API.INFO", nil)
		cancel()
		if err == nil {
			var info struct {
				Error *struct {
					Description string `json:"description"`
				} `json:"error"`
			}
			if jerr := json.Unmarshal(msg.Data, &info); jerr != nil {
				err = jerr
			} else if info.Error != nil {
				err = errors.New(info.Error.Description)
			} else {
				return nil
			}
		}
		if ctx.Err() != nil {
			if last == nil {
				last = err
			}
			return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		}
		last = err
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// StateDir is the well-known directory of the cluster "dqbench brokers up
// nats" starts.
func StateDir() string { return brokers.StandingDir(string(catalog.NATS)) }

// save writes the state file, so that the cluster can be found and
// stopped by another dqbench process.
func (c *Cluster) save() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return localcluster.Save(c.Dir, c)
}

// Load reads the cluster whose state file is in dir; it returns an error
// wrapping os.ErrNotExist when there is none.
func Load(dir string) (*Cluster, error) {
	c := new(Cluster)
	if err := localcluster.Load(dir, c); err != nil {
		return nil, err
	}
	if err := localcluster.InDir(dir, c.Dir); err != nil {
		return nil, err
	}
	return c, nil
}
