// Package cluster starts, finds and stops a throwaway Apache Kafka cluster
// in KRaft mode from the broker's jars (FindInstall): 1 or 3 local JVMs,
// each a combined broker and controller with its own node id, listener and
// controller ports on 127.0.0.1, configuration, log and data directory,
// all in one directory, storage formatted with a fresh cluster id. A Kafka
// already running on the machine is never touched.
//
// A cluster is described by its state file (state.json in its directory):
// "dqbench brokers up kafka" leaves one in a well-known directory
// (brokers.StandingDir("kafka")), so later runs and "dqbench brokers down
// kafka" find it. A run's own cluster (Options.Owned) has its processes in
// process groups that die with dqbench (Pdeathsig), and its directory in
// the leftover ledger.
package cluster

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/brokers/localcluster"
	"github.com/dqbench/dqbench/catalog"
)

// Cluster is a set of local Kafka nodes in one KRaft quorum.
type Cluster struct {
	// Dir holds everything the cluster writes, and its state file.
	Dir string `json:"dir"`
	// ID makes the cluster's names unique on the machine; ClusterID is
	// Kafka's own (the storage's).
	ID        string  `json:"id"`
	ClusterID string  `json:"cluster_id"`
	Install   Install `json:"install"`
	// TransactionVersion is the transaction.version feature the storage
	// was formatted with: 2 (KIP-890 part 2, Kafka 4.x's default) or 1.
	TransactionVersion int `json:"transaction_version"`
	// ReplicaLag is the followers' replica.fetch.wait.max.ms (with
	// replica.fetch.min.bytes 1 MiB); 0: Kafka's defaults.
	ReplicaLag time.Duration `json:"replica_lag,omitempty"`
	Nodes      []Node        `json:"nodes"`
	// Owner is the pid of the dqbench process whose run the cluster is
	// (its processes die with it); 0 for one "brokers up" left.
	Owner int `json:"owner,omitempty"`
	// Started is when the cluster was up, and how long starting it took.
	Started  time.Time     `json:"started"`
	StartDur time.Duration `json:"start_duration"`

	mu     sync.Mutex // guards Nodes[i].PID, exited and the state file
	exited map[int]<-chan struct{}
	// secure is Options.Secure, for writeConf and format (tests only: not
	// in the state file).
	secure *SecureListener
}

// Node is one Kafka process of a cluster: broker and controller.
type Node struct {
	ID             int32  `json:"id"` // node.id
	Name           string `json:"name"`
	Port           int    `json:"port"`            // the PLAINTEXT listener clients use
	ControllerPort int    `json:"controller_port"` // the KRaft quorum's
	// SecurePort is the SASL_SSL listener's (Options.Secure), 0 without.
	SecurePort int `json:"secure_port,omitempty"`
	// PID leads the node's process group; 0 while stopped.
	PID int `json:"pid"`
}

// SecureAddr is the node's SASL_SSL address (host:port), "" without one.
func (n Node) SecureAddr() string {
	if n.SecurePort == 0 {
		return ""
	}
	return fmt.Sprintf("127.0.0.1:%d", n.SecurePort)
}

// SecureListener is a SASL_SSL listener each node gets besides its
// PLAINTEXT one (which the nodes speak among themselves): TLS with the
// node's certificate, client certificates checked against CA (required
// when RequireClientCert), and logins by SCRAM-SHA-256, SCRAM-SHA-512
// (credentials written when the storage is formatted) and PLAIN, for each
// of Users (name → password). A testbench's: the passwords are in the
// nodes' files.
type SecureListener struct {
	CA, Cert, Key     string // PEM files; Key unencrypted PKCS#8
	RequireClientCert bool
	Users             map[string]string
}

// Addr is the node's client address (host:port).
func (n Node) Addr() string { return fmt.Sprintf("127.0.0.1:%d", n.Port) }

// Addrs lists every node's client address, the first node first.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Addr()
	}
	return out
}

// Options say what cluster to start.
type Options struct {
	// Dir is the cluster's directory; it is created, and removed by Stop.
	Dir string
	// Nodes: 1 or 3.
	Nodes int
	// TransactionVersion: 1 or 2 (0: 2, Kafka 4.x's default).
	TransactionVersion int
	// ReplicaLag: how long followers may wait before they fetch (0:
	// Kafka's default, at once).
	ReplicaLag time.Duration
	// Owned: the cluster is this run's: its processes die with this
	// process (Pdeathsig) and a later Sweep stops what is left of it.
	// Otherwise they get their own session and outlive it (brokers up).
	Owned bool
	// Secure, when set, adds a SASL_SSL listener to each node.
	Secure *SecureListener
}

// Start formats and starts a cluster, its nodes in parallel, and waits
// until every broker is registered and the group and transaction
// coordinators answer. On failure or when ctx ends it stops whatever it
// started and removes the directory.
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	in, err := FindInstall()
	if err != nil {
		return nil, err
	}
	if opts.Nodes != 1 && opts.Nodes != 3 {
		return nil, fmt.Errorf("a managed Kafka cluster has 1 or 3 nodes, not %d", opts.Nodes)
	}
	tv := opts.TransactionVersion
	if tv == 0 {
		tv = 2
	}
	began := time.Now()
	c = &Cluster{Dir: opts.Dir, ID: localcluster.RandomHex(3), ClusterID: newClusterID(), Install: in, TransactionVersion: tv, ReplicaLag: opts.ReplicaLag}
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
	ports, err := localcluster.FreePorts(3 * opts.Nodes)
	if err != nil {
		return c, err
	}
	c.secure = opts.Secure
	for i := range opts.Nodes {
		n := Node{ID: int32(i + 1), Name: fmt.Sprintf("kafka-%d", i+1), Port: ports[3*i], ControllerPort: ports[3*i+1]}
		if opts.Secure != nil {
			n.SecurePort = ports[3*i+2]
		}
		c.Nodes = append(c.Nodes, n)
	}
	if err := c.save(); err != nil {
		return c, err
	}
	errs := make([]error, len(c.Nodes))
	var wg sync.WaitGroup
	for i := range c.Nodes {
		wg.Go(func() {
			if errs[i] = c.writeConf(i); errs[i] == nil {
				errs[i] = c.format(ctx, i)
			}
			if errs[i] == nil {
				errs[i] = c.startNode(ctx, i)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return c, err
	}
	if err := c.WaitReady(ctx, 2*time.Minute); err != nil {
		return c, err
	}
	c.Started = time.Now()
	c.StartDur = time.Since(began)
	return c, c.save()
}

// newClusterID is a random Kafka cluster id: a UUID in URL-safe base64
// without padding, as kafka-storage random-uuid prints. Like Kafka's
// Uuid.randomUuid, never one that starts with "-", which the storage
// tool's command line would take for an option.
func newClusterID() string {
	for {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		b[6] = b[6]&0x0f | 0x40 // version 4
		b[8] = b[8]&0x3f | 0x80 // variant
		if id := base64.RawURLEncoding.EncodeToString(b); id[0] != '-' {
			return id
		}
	}
}

func (c *Cluster) nodeDir(i int) string { return filepath.Join(c.Dir, c.Nodes[i].Name) }

func (c *Cluster) confPath(i int) string { return filepath.Join(c.nodeDir(i), "server.properties") }

func (c *Cluster) logPath(i int) string { return filepath.Join(c.nodeDir(i), "server.log") }

// nodeConf is each node's server.properties: settings chosen for a
// testbench on one machine (docs/scenario.md, "A managed Kafka").
const nodeConf = `# dqbench managed Kafka cluster %[1]s, node %[2]d
process.roles=broker,controller
node.id=%[2]d
controller.quorum.voters=%[3]s
listeners=PLAINTEXT://127.0.0.1:%[4]d,CONTROLLER://127.0.0.1:%[5]d
advertised.listeners=PLAINTEXT://127.0.0.1:%[4]d
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=%[6]s
# every topic dqbench uses it creates itself
auto.create.topics.enable=false
num.partitions=1
# replication: every node holds every partition; acks=all waits for a
# majority (min.insync.replicas 2 of 3); no unclean election
default.replication.factor=%[7]d
min.insync.replicas=%[8]d
unclean.leader.election.enable=false
offsets.topic.replication.factor=%[7]d
offsets.topic.num.partitions=%[7]d
transaction.state.log.replication.factor=%[7]d
transaction.state.log.min.isr=%[8]d
transaction.state.log.num.partitions=%[7]d
share.coordinator.state.topic.replication.factor=%[7]d
share.coordinator.state.topic.min.isr=%[8]d
# a group starts at once, and a client may ask for short sessions
group.initial.rebalance.delay.ms=0
group.min.session.timeout.ms=500
# a killed node is fenced, and its partitions led elsewhere, in 3 s
# (Kafka's default 9 s)
broker.heartbeat.interval.ms=500
broker.session.timeout.ms=3000
`

// writeConf writes node i's server.properties and log4j2 configuration.
func (c *Cluster) writeConf(i int) error {
	n := c.Nodes[i]
	dir := c.nodeDir(i)
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
		return fmt.Errorf("node directory: %w", err)
	}
	voters := make([]string, len(c.Nodes))
	for j, m := range c.Nodes {
		voters[j] = fmt.Sprintf("%d@127.0.0.1:%d", m.ID, m.ControllerPort)
	}
	minISR := 1
	if len(c.Nodes) >= 3 {
		minISR = 2
	}
	conf := fmt.Sprintf(nodeConf, c.ID, n.ID, strings.Join(voters, ","), n.Port, n.ControllerPort,
		filepath.Join(dir, "data"), len(c.Nodes), minISR)
	if c.ReplicaLag > 0 {
		conf += fmt.Sprintf("# followers wait (replica_lag) before they fetch\nreplica.fetch.wait.max.ms=%d\nreplica.fetch.min.bytes=1048576\n", c.ReplicaLag.Milliseconds())
	}
	if c.secure != nil {
		extra, err := c.secureConf(i)
		if err != nil {
			return err
		}
		conf = strings.Replace(conf, fmt.Sprintf("CONTROLLER://127.0.0.1:%d\n", n.ControllerPort), fmt.Sprintf("CONTROLLER://127.0.0.1:%d,SASL_SSL://127.0.0.1:%d\n", n.ControllerPort, n.SecurePort), 1)
		conf = strings.Replace(conf, fmt.Sprintf("advertised.listeners=PLAINTEXT://127.0.0.1:%d\n", n.Port), fmt.Sprintf("advertised.listeners=PLAINTEXT://127.0.0.1:%d,SASL_SSL://127.0.0.1:%d\n", n.Port, n.SecurePort), 1)
		conf = strings.Replace(conf, "CONTROLLER:PLAINTEXT\n", "CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL\n", 1)
		conf += extra
	}
	if err := os.WriteFile(c.confPath(i), []byte(conf), 0o600); err != nil {
		return err
	}
	log := fmt.Sprintf(`rootLogger.level=INFO
rootLogger.appenderRef.f.ref=F
appender.f.type=File
appender.f.name=F
appender.f.fileName=%s
appender.f.layout.type=PatternLayout
appender.f.layout.pattern=[%%d] %%p %%m (%%c)%%n
logger.kafka-request.name=kafka.request.logger
logger.kafka-request.level=WARN
`, c.logPath(i))
	return os.WriteFile(filepath.Join(dir, "log4j2.properties"), []byte(log), 0o600)
}

// secureConf is the SASL_SSL listener's part of node i's
// server.properties; the node's key and certificate go into one PEM file,
// as Kafka's PEM keystore takes them.
func (c *Cluster) secureConf(i int) (string, error) {
	s := c.secure
	key, err := os.ReadFile(s.Key)
	if err != nil {
		return "", err
	}
	cert, err := os.ReadFile(s.Cert)
	if err != nil {
		return "", err
	}
	bundle := filepath.Join(c.nodeDir(i), "sasl-ssl-keystore.pem")
	if err := os.WriteFile(bundle, append(key, cert...), 0o600); err != nil {
		return "", err
	}
	var plain strings.Builder
	for u, pw := range s.Users {
		fmt.Fprintf(&plain, " user_%s=%q", u, pw)
	}
	auth := "requested"
	if s.RequireClientCert {
		auth = "required"
	}
	return fmt.Sprintf(`# a SASL_SSL listener for clients (TLS, SCRAM and PLAIN logins)
sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512,PLAIN
listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required%s;
listener.name.sasl_ssl.ssl.keystore.type=PEM
listener.name.sasl_ssl.ssl.keystore.location=%s
listener.name.sasl_ssl.ssl.truststore.type=PEM
listener.name.sasl_ssl.ssl.truststore.location=%s
listener.name.sasl_ssl.ssl.client.auth=%s
`, plain.String(), bundle, s.CA, auth), nil
}

// java is the command line of a JVM of node i running class with args.
func (c *Cluster) java(ctx context.Context, i int, heap string, class string, args ...string) *exec.Cmd {
	dir := c.nodeDir(i)
	argv := []string{
		"-Xms" + heap, "-Xmx" + heap, "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:+ExitOnOutOfMemoryError",
		"-Djava.awt.headless=true",
		"-Dlog4j2.configurationFile=" + filepath.Join(dir, "log4j2.properties"),
		"-cp", filepath.Join(c.Install.Libs, "*"),
		class,
	}
	cmd := exec.CommandContext(ctx, c.Install.Java, append(argv, args...)...)
	cmd.Dir = dir
	return cmd
}

// format writes node i's storage: the cluster id and the features, with
// transaction.version as asked.
func (c *Cluster) format(ctx context.Context, i int) error {
	args := []string{"format",
		"-t", c.ClusterID, "-c", c.confPath(i), "--ignore-formatted",
		"--feature", fmt.Sprintf("transaction.version=%d", c.TransactionVersion)}
	if c.secure != nil {
		for u, pw := range c.secure.Users {
			for _, m := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512"} {
				args = append(args, "--add-scram", fmt.Sprintf("%s=[name=%s,password=%s]", m, u, pw))
			}
		}
	}
	cmd := c.java(ctx, i, "128m", "kafka.tools.StorageTool", args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("format the storage of Kafka node %s: %w: %s", c.Nodes[i].Name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// startNode starts node i and waits until it accepts client connections.
func (c *Cluster) startNode(ctx context.Context, i int) error {
	cmd := c.java(context.Background(), i, "512m", "kafka.Kafka", c.confPath(i))
	out, err := os.OpenFile(filepath.Join(c.nodeDir(i), "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	exited, err := localcluster.Start(cmd, c.Owner > 0)
	if err != nil {
		return fmt.Errorf("start Kafka node %s: %w", c.Nodes[i].Name, err)
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
	if err := localcluster.WaitPort(ctx, c.Nodes[i].Port, time.Minute, exited); err != nil {
		return fmt.Errorf("Kafka node %s did not start: %w%s%s", c.Nodes[i].Name, err,
			localcluster.Tail(c.logPath(i)), localcluster.Tail(filepath.Join(c.nodeDir(i), "stdout.log")))
	}
	return nil
}

// WaitReady waits (at most limit) until every running node is a
// registered broker and the group and transaction coordinators answer:
// asking for them creates __consumer_offsets and __transaction_state, so
// a run's first group or transaction does not wait for that.
func (c *Cluster) WaitReady(ctx context.Context, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var running []string
	for _, s := range c.Status() {
		if s.Running {
			running = append(running, s.Addr())
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(running...), kgo.DialTimeout(2*time.Second), kgo.DisableClientMetrics())
	if err != nil {
		return err
	}
	defer cl.Close()
	var last error
	for ctx.Err() == nil {
		if last = ready(ctx, cl, len(running)); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("managed Kafka not ready within %s: %v%s", limit, last, localcluster.Tail(c.logPath(0)))
}

// ready says what is not ready yet, or nil.
func ready(ctx context.Context, cl *kgo.Client, brokers int) error {
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(rctx, cl)
	if err != nil {
		return err
	}
	if len(meta.Brokers) < brokers || meta.ControllerID < 0 {
		return fmt.Errorf("%d of %d brokers registered, controller %d", len(meta.Brokers), brokers, meta.ControllerID)
	}
	for _, kind := range []int8{0, 1} { // group, transaction
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType = kind
		req.CoordinatorKey = "dqbench-ready"
		req.CoordinatorKeys = []string{"dqbench-ready"}
		resp, err := req.RequestWith(rctx, cl)
		if err != nil {
			return err
		}
		code := resp.ErrorCode
		if len(resp.Coordinators) > 0 {
			code = resp.Coordinators[0].ErrorCode
		}
		if err := kerr.ErrorForCode(code); err != nil {
			return fmt.Errorf("coordinator (type %d): %w", kind, err)
		}
	}
	return nil
}

// StateDir is the well-known directory of the cluster "dqbench brokers up
// kafka" starts.
func StateDir() string { return brokers.StandingDir(string(catalog.Kafka)) }

// save writes the state file.
func (c *Cluster) save() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return localcluster.Save(c.Dir, c)
}

// Load reads the cluster whose state file is in dir; the error wraps
// os.ErrNotExist when there is none.
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
