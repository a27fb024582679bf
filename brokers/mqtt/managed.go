package mqtt

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	pahomqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
)

// mosquitto is a throwaway Mosquitto (mode managed) started from the
// installed binary for one variant, with its configuration and persistence
// in a temporary directory: each variant gets its own, so its limits are
// the variant's (max_queued_messages, max_inflight_messages).
type mosquitto struct {
	dir    string
	addr   string
	cmd    *exec.Cmd
	exited chan struct{}
	limits string

	// sys follows the broker's count of dropped messages, for Backlog.
	sys     pahomqtt.Client
	dropped atomic.Int64
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
	dir, err := os.MkdirTemp("", "dqbench-mosquitto-*")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	queued, inflight := s.Limits()
	m := &mosquitto{dir: dir, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), exited: make(chan struct{}),
		limits: fmt.Sprintf("max_queued_messages %d, max_inflight_messages %d", queued, inflight)}
	conf := fmt.Sprintf(`listener %d 127.0.0.1
allow_anonymous true
persistence true
persistence_location %s/
max_queued_messages %d
max_inflight_messages %d
sys_interval 1
log_dest file %s
`, port, dir, queued, inflight, filepath.Join(dir, "mosquitto.log"))
	confPath := filepath.Join(dir, "mosquitto.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	m.cmd = exec.Command(bin, "-c", confPath)
	// Its own process group, killed with dqbench if dqbench dies.
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := m.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%w: start %s: %v", brokers.ErrUnreachable, bin, err)
	}
	go func() { _ = m.cmd.Wait(); close(m.exited) }()
	if err := m.waitReady(ctx); err != nil {
		m.stop()
		return nil, err
	}
	if err := m.watchStore(ctx); err != nil {
		m.stop()
		return nil, err
	}
	return m, nil
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
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err := dial(ctx, "tcp://"+m.addr); err == nil {
			return nil
		}
		select {
		case <-m.exited:
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

// watchStore subscribes to $SYS/broker/publish/messages/dropped, the
// messages the broker dropped past its limits (Mosquitto publishes it
// every second when it changed).
func (m *mosquitto) watchStore(ctx context.Context) error {
	opts := pahomqtt.NewClientOptions().AddBroker("tcp://" + m.addr).SetClientID("dqb-sys").
		SetCleanSession(true).SetAutoReconnect(false).SetConnectTimeout(5 * time.Second)
	m.sys = pahomqtt.NewClient(opts)
	if err := wait(ctx, m.sys.Connect(), "connect to managed mosquitto"); err != nil {
		return fmt.Errorf("%w: %v", brokers.ErrUnreachable, err)
	}
	t := m.sys.Subscribe("$SYS/broker/publish/messages/dropped", 0, func(_ pahomqtt.Client, msg pahomqtt.Message) {
		if n, err := strconv.ParseInt(string(msg.Payload()), 10, 64); err == nil {
			m.dropped.Store(n)
		}
	})
	return wait(ctx, t, "subscribe to $SYS")
}

// stop kills the broker's process group and removes its directory.
func (m *mosquitto) stop() error {
	if m.sys != nil {
		m.sys.Disconnect(0)
	}
	if m.cmd.Process != nil {
		_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
		<-m.exited
	}
	return os.RemoveAll(m.dir)
}
