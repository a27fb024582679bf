package mqtt

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	pahomqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/leftover"
)

// mosquitto is a throwaway Mosquitto (mode managed) started from the
// installed binary for one variant, with its configuration and persistence
// in a temporary directory: each variant gets its own, so its limits are
// the variant's (max_queued_messages, max_inflight_messages).
type mosquitto struct {
	bin    string
	dir    string
	addr   string
	limits string

	pmu      sync.Mutex // guards cmd, exited and sys, replaced by a restart
	cmd      *exec.Cmd
	exited   chan struct{}
	restarts atomic.Int64

	// sys follows the broker's $SYS counts, for Backlog.
	sys           pahomqtt.Client
	dropped       atomic.Int64
	mu            sync.Mutex
	droppedBefore int64 // dropped by the broker before its last restart
	stored        int64
	retained      int64
	sysAt         time.Time
}

// mosquittoBinary is where the installed Mosquitto is looked for.
func mosquittoBinary() (string, error) {
	if p, err := exec.LookPath("mosquitto"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto", "/opt/homebrew/sbin/mosquitto"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: mode managed needs the mosquitto binary, which is not installed (apt-get install mosquitto, brew install mosquitto); or use mode: embedded", brokers.ErrUnreachable)
}

// startMosquitto starts a Mosquitto with the settings' limits on a free
// loopback port and waits until it answers.
func startMosquitto(ctx context.Context, s catalog.MQTTSettings) (*mosquitto, error) {
	bin, err := mosquittoBinary()
	if err != nil {
		return nil, err
	}
	dir, err := leftover.MkdirTemp("dqbench-mosquitto-*")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	m := &mosquitto{bin: bin, dir: dir, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	if m.limits, err = writeConf(dir, port, s); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := m.launch(ctx); err != nil {
		m.stop()
		return nil, err
	}
	return m, nil
}

// writeConf writes the configuration of a Mosquitto listening on port of
// 127.0.0.1 with its persistence and log in dir and the settings' limits,
// and returns the limits as the report names them.
func writeConf(dir string, port int, s catalog.MQTTSettings) (limits string, err error) {
	queued, inflight := s.Limits()
	persistence := s.Persistence == nil || *s.Persistence
	// Started as root, Mosquitto switches to the user "mosquitto", which
	// cannot write the temporary directory: it stays the user dqbench runs
	// as (ignored when not root).
	me := "root"
	if u, err := user.Current(); err == nil {
		me = u.Username
	}
	conf := fmt.Sprintf(`user %s
listener %d 127.0.0.1
allow_anonymous true
persistence %v
persistence_location %s/
max_queued_messages %d
max_inflight_messages %d
sys_interval 1
log_dest file %s
`, me, port, persistence, dir, queued, inflight, filepath.Join(dir, "mosquitto.log"))
	if err := os.WriteFile(filepath.Join(dir, "mosquitto.conf"), []byte(conf), 0o600); err != nil {
		return "", err
	}
	return fmt.Sprintf("max_queued_messages %d, max_inflight_messages %d, persistence %v", queued, inflight, persistence), nil
}

// launch starts the process on the configuration in m.dir and waits until
// it answers.
func (m *mosquitto) launch(ctx context.Context) error {
	if err := m.spawn(false); err != nil {
		return err
	}
	if err := m.waitReady(ctx); err != nil {
		return err
	}
	return m.watchStore(ctx)
}

// spawn starts the process on the configuration in m.dir. A variant's
// Mosquitto has its own process group, killed with dqbench if dqbench
// dies; a standing one ("dqbench brokers up mqtt") has its own session
// and outlives dqbench.
func (m *mosquitto) spawn(standing bool) error {
	cmd := exec.Command(m.bin, "-c", filepath.Join(m.dir, "mosquitto.conf"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if standing {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%w: start %s: %v", brokers.ErrUnreachable, m.bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	m.pmu.Lock()
	m.cmd, m.exited = cmd, exited
	m.pmu.Unlock()
	return nil
}

// restart stops the broker as an operator would (SIGTERM: Mosquitto
// writes its persistence file, when persistence is on) and starts it again
// on the same port and directory. A restart keeps exactly what Mosquitto
// keeps.
func (m *mosquitto) restart(ctx context.Context) error {
	m.restarts.Add(1)
	m.pmu.Lock()
	cmd, exited, sys := m.cmd, m.exited, m.sys
	m.pmu.Unlock()
	if sys != nil {
		sys.Disconnect(0)
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	m.mu.Lock()
	m.droppedBefore = m.dropped.Load() // the new process counts from 0
	m.mu.Unlock()
	return m.launch(ctx)
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func (m *mosquitto) waitReady(ctx context.Context) error {
	m.pmu.Lock()
	exited := m.exited
	m.pmu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err := dial(ctx, "tcp://"+m.addr); err == nil {
			return nil
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(m.dir, "mosquitto.log"))
			return fmt.Errorf("%w: managed mosquitto exited at start: %s", brokers.ErrUnreachable, log)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: managed mosquitto did not listen on %s within 5s", brokers.ErrUnreachable, m.addr)
		}
	}
}

// watchStore follows three $SYS counts Mosquitto publishes every second
// when they change: the messages it dropped past its limits, every
// message it holds (retained ones, $SYS's own among them, and those queued
// or in flight to a client) and the retained ones. The last two give what
// the consumer session still has on the broker: it serves nothing else,
// and dqbench publishes nothing retained.
func (m *mosquitto) watchStore(ctx context.Context) error {
	opts := pahomqtt.NewClientOptions().AddBroker("tcp://" + m.addr).SetClientID("dqb-sys").
		SetCleanSession(true).SetAutoReconnect(false).SetConnectTimeout(5 * time.Second)
	sys := pahomqtt.NewClient(opts)
	if err := wait(ctx, sys.Connect(), "connect to managed mosquitto"); err != nil {
		return fmt.Errorf("%w: %v", brokers.ErrUnreachable, err)
	}
	m.pmu.Lock()
	m.sys = sys
	m.pmu.Unlock()
	const (
		droppedTopic  = "$SYS/broker/publish/messages/dropped"
		storeTopic    = "$SYS/broker/store/messages/count"
		retainedTopic = "$SYS/broker/retained messages/count"
	)
	t := sys.SubscribeMultiple(map[string]byte{droppedTopic: 0, storeTopic: 0, retainedTopic: 0}, func(_ pahomqtt.Client, msg pahomqtt.Message) {
		n, err := strconv.ParseInt(string(msg.Payload()), 10, 64)
		if err != nil {
			return
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		switch msg.Topic() {
		case droppedTopic:
			m.dropped.Store(m.droppedBefore + n)
		case storeTopic:
			m.stored = n
		case retainedTopic:
			m.retained = n
		}
		m.sysAt = time.Now()
	})
	return wait(ctx, t, "subscribe to $SYS")
}

// held is what the broker says it still holds for the consumer, and
// whether that is settled: no $SYS change for two intervals after since.
func (m *mosquitto) held(since time.Time) (n int64, settled bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	last := m.sysAt
	if since.After(last) {
		last = since
	}
	return max(m.stored-m.retained, 0), time.Since(last) > 2500*time.Millisecond
}

// stop kills the broker's process group and removes its directory.
func (m *mosquitto) stop() error {
	m.pmu.Lock()
	cmd, exited, sys := m.cmd, m.exited, m.sys
	m.pmu.Unlock()
	if sys != nil {
		sys.Disconnect(0)
	}
	if cmd != nil && cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	if err := os.RemoveAll(m.dir); err != nil {
		return err
	}
	leftover.Forget(leftover.Entry{Kind: leftover.Dir, Name: m.dir})
	return nil
}
