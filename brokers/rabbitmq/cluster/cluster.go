// Package cluster starts, finds and stops a throwaway RabbitMQ cluster of
// local nodes from the installed rabbitmq-server: its own node names,
// ports, Erlang cookie, epmd and data and log directories in one
// directory, so that a RabbitMQ already running on the machine is never
// touched. It drives the nodes with the installed CLI tools (rabbitmqctl,
// rabbitmq-queues); no management plugin is needed.
//
// A cluster is described by its state file (state.json in its directory):
// "dqbench brokers up" leaves one in a well-known directory (StateDir), so
// later runs and "dqbench brokers down" find it.
package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNotInstalled: rabbitmq-server was not found on this machine.
var ErrNotInstalled = errors.New("rabbitmq-server is not installed")

// Size is the number of nodes a cluster has unless told otherwise.
const Size = 3

// Host is the host part of every node name and where every port listens.
const Host = "localhost"

// Cluster is a set of local RabbitMQ nodes joined into one cluster.
type Cluster struct {
	// Dir holds everything the cluster writes, and its state file.
	Dir string `json:"dir"`
	// ID makes the node names unique on the machine.
	ID       string `json:"id"`
	Cookie   string `json:"cookie"`
	EPMDPort int    `json:"epmd_port"`
	EPMDPID  int    `json:"epmd_pid"`
	Nodes    []Node `json:"nodes"`
	// Owner is the pid of the dqbench process that stops the cluster when
	// it ends (a run's throwaway cluster); 0 for one "brokers up" left.
	Owner int `json:"owner,omitempty"`
	// Started is when the cluster was up, and how long starting it took.
	Started  time.Time     `json:"started"`
	StartDur time.Duration `json:"start_duration"`

	mu sync.Mutex // guards Nodes[i].PID and the state file
}

// Node is one RabbitMQ node of a cluster.
type Node struct {
	Name     string `json:"name"` // NAME@localhost
	AMQPPort int    `json:"amqp_port"`
	DistPort int    `json:"dist_port"`
	// PID leads the node's process group (the Erlang VM); 0 while stopped.
	PID int `json:"pid"`
}

// URL is the node's AMQP URL with the default guest user.
func (n Node) URL() string { return fmt.Sprintf("amqp://guest:guest@127.0.0.1:%d/", n.AMQPPort) }

// URLs lists every node's AMQP URL, the first node first.
func (c *Cluster) URLs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.URL()
	}
	return out
}

// install is where the server's scripts are.
type install struct {
	server string // rabbitmq-server (the script that runs the node in the foreground)
	bin    string // its directory, with rabbitmqctl and rabbitmq-queues
}

// BinEnv names the environment variable that says where rabbitmq-server
// and rabbitmqctl are (a generic-unix install's sbin), instead of looking.
const BinEnv = "DQBENCH_RABBITMQ_BIN"

// findInstall finds rabbitmq-server: in $DQBENCH_RABBITMQ_BIN when set,
// else Debian's scripts (the /usr/sbin ones only switch to the rabbitmq
// user), else the first on PATH.
func findInstall() (install, error) {
	if dir := os.Getenv(BinEnv); dir != "" {
		if p := filepath.Join(dir, "rabbitmq-server"); isExec(p) && isExec(filepath.Join(dir, "rabbitmqctl")) {
			return install{server: p, bin: dir}, nil
		}
		return install{}, fmt.Errorf("%w in %s=%s", ErrNotInstalled, BinEnv, dir)
	}
	for _, dir := range []string{"/usr/lib/rabbitmq/bin"} {
		if p := filepath.Join(dir, "rabbitmq-server"); isExec(p) && isExec(filepath.Join(dir, "rabbitmqctl")) {
			return install{server: p, bin: dir}, nil
		}
	}
	if p, err := exec.LookPath("rabbitmq-server"); err == nil {
		dir := filepath.Dir(p)
		if isExec(filepath.Join(dir, "rabbitmqctl")) {
			return install{server: p, bin: dir}, nil
		}
	}
	return install{}, ErrNotInstalled
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// Installed reports whether rabbitmq-server is installed.
func Installed() bool {
	_, err := findInstall()
	return err == nil
}

// runAs is the user the nodes run as: Debian's server refuses to run as
// root, so root drops to the rabbitmq user; anyone else runs them as
// themselves.
type runAs struct {
	cred *syscall.Credential // nil: the current user
	uid  int
	gid  int
	name string // the user's name, when it is not the current user
}

func lookupRunAs() (runAs, error) {
	if os.Geteuid() != 0 {
		return runAs{uid: os.Geteuid(), gid: os.Getegid()}, nil
	}
	u, err := user.Lookup("rabbitmq")
	if err != nil {
		return runAs{}, fmt.Errorf("run RabbitMQ nodes as root: no rabbitmq user to drop to (%v)", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return runAs{cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, uid: uid, gid: gid, name: u.Username}, nil
}

// ErrNoAccess: the user the nodes run as cannot reach the cluster's
// directory.
var ErrNoAccess = errors.New("the RabbitMQ nodes cannot reach their directory")

// reach says whether the nodes can enter dir: nil when they run as the
// current user, or when the user they run as may enter dir and every
// directory above it (by its mode bits; a directory not made yet will be,
// 0755); else which directory stops them.
func (as runAs) reach(dir string) error {
	if as.cred == nil {
		return nil
	}
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if st, ok := sysStat(fi, err); ok {
			bit := os.FileMode(0o001)
			switch {
			case int(st.Uid) == as.uid:
				bit = 0o100
			case int(st.Gid) == as.gid:
				bit = 0o010
			}
			if fi.Mode().Perm()&bit == 0 {
				return fmt.Errorf("%w: RabbitMQ refuses to run as root, so dqbench runs its nodes as user %s, who cannot enter %s (mode %04o, owner uid %d)",
					ErrNoAccess, as.name, p, fi.Mode().Perm(), st.Uid)
			}
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// sysStat is a Stat's owner, when it has one.
func sysStat(fi os.FileInfo, err error) (*syscall.Stat_t, bool) {
	if err != nil {
		return nil, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return st, ok
}

// Options say what cluster to start.
type Options struct {
	// Dir is the cluster's directory; it is created, and removed by Stop.
	Dir string
	// Size is the number of nodes (Size when 0).
	Size int
	// Config is appended to every node's rabbitmq.conf (new-style keys).
	Config string
	// Advanced, when set, is every node's advanced.config (Erlang terms:
	// settings rabbitmq.conf has no key for).
	Advanced string
	// Owned: this process stops the cluster when it is done with it
	// (Cluster.Owner), so a later Sweep may stop it if this process died
	// first.
	Owned bool
}

// Start starts a cluster of local nodes, in parallel, joins them to the
// first and waits until every node runs in the cluster. On failure or when
// ctx ends it stops whatever it started and removes the directory.
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	in, err := findInstall()
	if err != nil {
		return nil, err
	}
	as, err := lookupRunAs()
	if err != nil {
		return nil, err
	}
	if err := as.reach(filepath.Dir(opts.Dir)); err != nil { // the directory itself becomes the nodes' (prepare)
		return nil, fmt.Errorf("%w; point TMPDIR (XDG_RUNTIME_DIR for \"dqbench brokers up\") at a directory that user can enter", err)
	}
	size := opts.Size
	if size <= 0 {
		size = Size
	}
	began := time.Now()
	c = &Cluster{Dir: opts.Dir, ID: randomHex(4), Cookie: strings.ToUpper(randomHex(16))}
	if opts.Owned {
		c.Owner = os.Getpid()
	}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	if err := c.prepare(as, opts.Config, opts.Advanced); err != nil {
		return c, err
	}
	ports, err := freePorts(1 + 2*size)
	if err != nil {
		return c, err
	}
	c.EPMDPort = ports[0]
	for i := range size {
		c.Nodes = append(c.Nodes, Node{
			Name:     fmt.Sprintf("dqbench-%s-%d@%s", c.ID, i+1, Host),
			AMQPPort: ports[1+2*i], DistPort: ports[2+2*i],
		})
	}
	if err := c.startEPMD(as); err != nil {
		return c, err
	}
	if err := c.save(); err != nil {
		return c, err
	}
	errs := make([]error, size)
	var wg sync.WaitGroup
	for i := range c.Nodes {
		wg.Go(func() { errs[i] = c.startNode(ctx, in, as, i) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return c, err
	}
	if size == 1 {
		// No join to wait for: wait for the boot to end, as a join would.
		if err := c.awaitStartup(ctx, in, as, 0); err != nil {
			return c, err
		}
	}
	// Join the others to the first: their apps stop in parallel, but they
	// join one at a time (two joins at once can fail to start Mnesia).
	for i := 1; i < size; i++ {
		wg.Go(func() { _, errs[i] = c.ctl(ctx, in, as, i, "rabbitmqctl", "stop_app") })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return c, err
	}
	for i := 1; i < size; i++ {
		if err := c.join(ctx, in, as, i); err != nil {
			return c, err
		}
	}
	if err := c.waitClustered(ctx, in, as); err != nil {
		return c, err
	}
	c.Started = time.Now()
	c.StartDur = time.Since(began)
	return c, c.save()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// prepare makes the directory, owned by the user the nodes run as, with the
// cookie, an empty plugin list and the shared configuration.
func (c *Cluster) prepare(as runAs, config, advanced string) error {
	if err := os.MkdirAll(filepath.Join(c.Dir, "home"), 0o755); err != nil {
		return fmt.Errorf("cluster directory: %w", err)
	}
	conf := "disk_free_limit.absolute = 50MB\n" + config
	files := map[string]string{
		"home/.erlang.cookie": c.Cookie,
		"enabled_plugins":     "[].\n",
		"rabbitmq-env.conf":   "", // read instead of /etc/rabbitmq/rabbitmq-env.conf
		"rabbitmq.conf":       conf,
	}
	if advanced != "" {
		files["advanced.config"] = advanced
	}
	for name, text := range files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, "cookie") {
			mode = 0o400
		}
		if err := os.WriteFile(filepath.Join(c.Dir, name), []byte(text), mode); err != nil {
			return fmt.Errorf("cluster directory: %w", err)
		}
	}
	return filepath.Walk(c.Dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, as.uid, as.gid)
	})
}

// freePorts asks the kernel for n free TCP ports on 127.0.0.1.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	out := make([]int, n)
	for i := range out {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		ls = append(ls, l)
		out[i] = l.Addr().(*net.TCPAddr).Port
	}
	return out, nil
}

// env is the environment of every node and CLI call of the cluster: its own
// cookie (HOME), epmd and rabbitmq-env.conf, nothing of the caller's.
func (c *Cluster) env() []string {
	return []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"LANG=C.UTF-8", "LC_ALL=C.UTF-8",
		"HOME=" + filepath.Join(c.Dir, "home"),
		"RABBITMQ_CONF_ENV_FILE=" + filepath.Join(c.Dir, "rabbitmq-env.conf"),
		"ERL_EPMD_ADDRESS=127.0.0.1",
		"ERL_EPMD_PORT=" + strconv.Itoa(c.EPMDPort),
	}
}

func (c *Cluster) nodeEnv(i int) []string {
	n := c.Nodes[i]
	dir := c.nodeDir(i)
	env := c.env()
	if adv := filepath.Join(c.Dir, "advanced.config"); isFile(adv) {
		env = append(env, "RABBITMQ_ADVANCED_CONFIG_FILE="+adv)
	}
	return append(env,
		"RABBITMQ_NODENAME="+n.Name,
		"RABBITMQ_NODE_IP_ADDRESS=127.0.0.1",
		"RABBITMQ_NODE_PORT="+strconv.Itoa(n.AMQPPort),
		"RABBITMQ_DIST_PORT="+strconv.Itoa(n.DistPort),
		"RABBITMQ_CONFIG_FILE="+filepath.Join(c.Dir, "rabbitmq.conf"),
		"RABBITMQ_ENABLED_PLUGINS_FILE="+filepath.Join(c.Dir, "enabled_plugins"),
		"RABBITMQ_MNESIA_BASE="+filepath.Join(dir, "mnesia"),
		"RABBITMQ_LOG_BASE="+filepath.Join(dir, "log"),
		"RABBITMQ_PID_FILE="+filepath.Join(dir, "pid"),
		"ERL_FLAGS=-kernel inet_dist_use_interface {127,0,0,1}",
	)
}

func (c *Cluster) nodeDir(i int) string { return filepath.Join(c.Dir, fmt.Sprintf("node%d", i+1)) }

// spawn starts a process of the cluster in its own session and process
// group (so that a Ctrl-C to dqbench or a closed terminal does not reach
// it, and a kill of the group takes all of it), as the nodes' user, its output in the file out. It is not
// waited for by the caller: a reaper goroutine collects its exit, so the
// process can outlive the call (brokers up) and is killed by pid.
func spawn(as runAs, dir string, env []string, out string, name string, args ...string) (*exec.Cmd, error) {
	f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: as.cred}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	reapers.Store(cmd.Process.Pid, exited)
	return cmd, nil
}

// reapers maps the pid of each process this process spawned to a channel
// closed when it exited (and was reaped).
var reapers sync.Map

func (c *Cluster) startEPMD(as runAs) error {
	epmd, err := exec.LookPath("epmd")
	if err != nil {
		return fmt.Errorf("%w: epmd not found (%v)", ErrNotInstalled, err)
	}
	cmd, err := spawn(as, c.Dir, c.env(), filepath.Join(c.Dir, "epmd.log"), epmd, "-port", strconv.Itoa(c.EPMDPort), "-address", "127.0.0.1")
	if err != nil {
		return fmt.Errorf("start epmd: %w", err)
	}
	c.EPMDPID = cmd.Process.Pid
	return waitPort(context.Background(), c.EPMDPort, 10*time.Second, c.EPMDPID)
}

// startNode starts node i and waits until it accepts AMQP connections. A
// port chosen free can be taken by another process before the node binds
// it (tests that start brokers side by side did, in CI): the node then
// exits at once saying so, and is started again on fresh ports, at most
// three times.
func (c *Cluster) startNode(ctx context.Context, in install, as runAs, i int) error {
	for try := 1; ; try++ {
		err := c.startNodeOnce(ctx, in, as, i)
		if err == nil || try == 3 || !portTaken(err) {
			return err
		}
		ports, perr := freePorts(2)
		if perr != nil {
			return err
		}
		c.mu.Lock()
		c.Nodes[i].AMQPPort, c.Nodes[i].DistPort = ports[0], ports[1]
		c.mu.Unlock()
	}
}

// portTaken says whether a node failed to start because one of its ports
// was in use.
func portTaken(err error) bool {
	s := err.Error()
	return strings.Contains(s, "dist_port_already_used") || strings.Contains(s, "eaddrinuse")
}

// startNodeOnce starts node i on its ports.
func (c *Cluster) startNodeOnce(ctx context.Context, in install, as runAs, i int) error {
	dir := c.nodeDir(i)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.Lchown(dir, as.uid, as.gid); err != nil {
		return err
	}
	out := filepath.Join(dir, "console.log")
	cmd, err := spawn(as, c.Dir, c.nodeEnv(i), out, in.server)
	if err != nil {
		return fmt.Errorf("start RabbitMQ node %s: %w", c.Nodes[i].Name, err)
	}
	c.mu.Lock()
	c.Nodes[i].PID = cmd.Process.Pid
	c.mu.Unlock()
	if err := c.save(); err != nil {
		return err
	}
	if err := waitPort(ctx, c.Nodes[i].AMQPPort, 2*time.Minute, cmd.Process.Pid); err != nil {
		return fmt.Errorf("RabbitMQ node %s did not start: %w%s", c.Nodes[i].Name, err, tail(out))
	}
	return nil
}

// tail is the end of a log file, for an error message.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return ""
	}
	if len(b) > 1500 {
		b = b[len(b)-1500:]
	}
	return fmt.Sprintf("; the end of %s:\n%s", path, strings.TrimSpace(string(b)))
}

// waitPort waits until 127.0.0.1:port accepts a connection, while process
// pid lives.
func waitPort(ctx context.Context, port int, limit time.Duration, pid int) error {
	deadline := time.Now().Add(limit)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return nil
		}
		if !alive(pid) {
			return fmt.Errorf("the process exited before it listened on %s", addr)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listens on %s after %s", addr, limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if ch, ok := reapers.Load(pid); ok {
		select {
		case <-ch.(chan struct{}):
			return false
		default:
		}
	}
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err == nil {
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && i+2 < len(b) && b[i+2] == 'Z' {
			return false
		}
	}
	return true
}

// ctl runs one of the cluster's CLI tools (rabbitmqctl, rabbitmq-queues)
// against node i and returns its output.
func (c *Cluster) ctl(ctx context.Context, in install, as runAs, i int, tool string, args ...string) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, filepath.Join(in.bin, tool), append([]string{"-n", c.Nodes[i].Name}, args...)...)
	cmd.Dir = c.Dir
	cmd.Env = c.env()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: as.cred}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s on %s: %v: %s", tool, strings.Join(args, " "), c.Nodes[i].Name, err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// join makes node i, its app stopped, a member of node 1's cluster and
// starts its app; a failed attempt is reset and tried again, twice, a
// second later each time: on a loaded machine join_cluster was once
// refused twice ("Mnesia is still running") after stop_app had returned.
func (c *Cluster) join(ctx context.Context, in install, as runAs, i int) error {
	steps := [][]string{{"join_cluster", c.Nodes[0].Name}, {"start_app"}}
	var err error
	for attempt := range 3 {
		if attempt > 0 {
			for _, args := range [][]string{{"stop_app"}, {"reset"}} {
				_, _ = c.ctl(ctx, in, as, i, "rabbitmqctl", args...)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(attempt) * time.Second):
			}
		}
		err = nil
		for _, args := range steps {
			if _, err = c.ctl(ctx, in, as, i, "rabbitmqctl", args...); err != nil {
				break
			}
		}
		if err == nil || ctx.Err() != nil {
			return err
		}
	}
	return err
}

// waitClustered waits until the first node sees every node running.
func (c *Cluster) waitClustered(ctx context.Context, in install, as runAs) error {
	out, err := c.ctl(ctx, in, as, 0, "rabbitmqctl", "cluster_status", "--formatter", "json")
	if err != nil {
		return err
	}
	running, err := runningNodes(out)
	if err != nil {
		return err
	}
	for _, n := range c.Nodes {
		if !contains(running, n.Name) {
			return fmt.Errorf("node %s is not running in the cluster (running: %s)", n.Name, strings.Join(running, ", "))
		}
	}
	return nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// runningNodes reads running_nodes from cluster_status --formatter json.
func runningNodes(out string) ([]string, error) {
	var st struct {
		Running []string `json:"running_nodes"`
	}
	if err := json.Unmarshal([]byte(jsonPart(out)), &st); err != nil {
		return nil, fmt.Errorf("read cluster_status: %v: %s", err, out)
	}
	return st.Running, nil
}

// jsonPart skips what a CLI prints before its JSON (a warning line).
func jsonPart(out string) string {
	if i := strings.IndexAny(out, "{["); i > 0 {
		return out[i:]
	}
	return out
}
