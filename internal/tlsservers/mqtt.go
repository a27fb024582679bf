package tlsservers

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"syscall"
	"time"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/dqbench/dqbench/internal/testcerts"
)

// MQTTUser and MQTTPassword are the only login of the MQTT brokers
// started here (no anonymous client gets in).
const (
	MQTTUser     = "dq"
	MQTTPassword = "Pw-mq77-3b9"
)

// MQTT is a running MQTT broker with a TLS listener, which requires
// client certificates signed by Certs.CA, and a plain one.
type MQTT struct {
	Certs *testcerts.Set
	// TLSURL is ssl:// to the TLS listener, PlainURL tcp:// to the plain
	// one, TLSAsTCP tcp:// to the TLS one. None has a user.
	TLSURL, PlainURL, TLSAsTCP string
	Close                      func()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func mqttURLs(certs *testcerts.Set, tlsPort, plainPort int) *MQTT {
	return &MQTT{
		Certs:    certs,
		TLSURL:   fmt.Sprintf("ssl://127.0.0.1:%d", tlsPort),
		PlainURL: fmt.Sprintf("tcp://127.0.0.1:%d", plainPort),
		TLSAsTCP: fmt.Sprintf("tcp://127.0.0.1:%d", tlsPort),
	}
}

// StartMochi starts mochi-mqtt in this process with the two listeners and
// the login MQTTUser, its certificates in dir.
func StartMochi(dir string) (*MQTT, error) {
	certs, err := testcerts.Write(dir, "dqbench-mqtt-test-ca")
	if err != nil {
		return nil, err
	}
	tlsCfg, err := certs.ServerConfig(true)
	if err != nil {
		return nil, err
	}
	srv := mochi.New(&mochi.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := srv.AddHook(new(login), nil); err != nil {
		return nil, err
	}
	tlsPort, err := freePort()
	if err != nil {
		return nil, err
	}
	plainPort, err := freePort()
	if err != nil {
		return nil, err
	}
	for _, l := range []*listeners.TCP{
		listeners.NewTCP(listeners.Config{ID: "tls", Address: fmt.Sprintf("127.0.0.1:%d", tlsPort), TLSConfig: tlsCfg}),
		listeners.NewTCP(listeners.Config{ID: "plain", Address: fmt.Sprintf("127.0.0.1:%d", plainPort)}),
	} {
		if err := srv.AddListener(l); err != nil {
			srv.Close()
			return nil, err
		}
	}
	if err := srv.Serve(); err != nil {
		srv.Close()
		return nil, err
	}
	m := mqttURLs(certs, tlsPort, plainPort)
	m.Close = func() { srv.Close() }
	return m, nil
}

// StartMosquitto starts the installed mosquitto (/usr/sbin/mosquitto, or
// on PATH) with the two listeners and a password file (mosquitto_passwd)
// holding MQTTUser, in dir; stopped by Close.
func StartMosquitto(ctx context.Context, dir string) (*MQTT, error) {
	bin, err := exec.LookPath("mosquitto")
	if err != nil {
		bin = "/usr/sbin/mosquitto"
	}
	passwd, err := exec.LookPath("mosquitto_passwd")
	if err != nil {
		return nil, fmt.Errorf("mosquitto_passwd: %w", err)
	}
	certs, err := testcerts.Write(dir, "dqbench-mosquitto-test-ca")
	if err != nil {
		return nil, err
	}
	pwFile := filepath.Join(dir, "passwd")
	if out, err := exec.CommandContext(ctx, passwd, "-b", "-c", pwFile, MQTTUser, MQTTPassword).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("mosquitto_passwd: %v: %s", err, out)
	}
	tlsPort, err := freePort()
	if err != nil {
		return nil, err
	}
	plainPort, err := freePort()
	if err != nil {
		return nil, err
	}
	me := "root"
	if u, err := user.Current(); err == nil {
		me = u.Username
	}
	conf := fmt.Sprintf(`user %s
per_listener_settings false
allow_anonymous false
password_file %s
persistence false
log_dest file %s
listener %d 127.0.0.1
cafile %s
certfile %s
keyfile %s
require_certificate true
listener %d 127.0.0.1
`, me, pwFile, filepath.Join(dir, "mosquitto.log"), tlsPort, certs.CA, certs.Cert, certs.Key, plainPort)
	confFile := filepath.Join(dir, "mosquitto.conf")
	if err := os.WriteFile(confFile, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-c", confFile)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	for _, port := range []int{tlsPort, plainPort} {
		if err := waitPort(ctx, port, exited); err != nil {
			stop()
			log, _ := os.ReadFile(filepath.Join(dir, "mosquitto.log"))
			return nil, fmt.Errorf("mosquitto: %v: %s", err, log)
		}
	}
	m := mqttURLs(certs, tlsPort, plainPort)
	m.Close = stop
	return m, nil
}

// waitPort waits (up to 10 s) until something listens on port.
func waitPort(ctx context.Context, port int, exited <-chan struct{}) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("exited at start")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("port %d not listening after 10s", port)
}

// login is a mochi-mqtt hook that lets in MQTTUser with MQTTPassword only,
// to every topic.
type login struct{ mochi.HookBase }

func (*login) ID() string { return "dqbench-test-login" }

func (*login) Provides(b byte) bool {
	return b == mochi.OnConnectAuthenticate || b == mochi.OnACLCheck
}

func (*login) OnConnectAuthenticate(cl *mochi.Client, pk packets.Packet) bool {
	return string(cl.Properties.Username) == MQTTUser && string(pk.Connect.Password) == MQTTPassword
}

func (*login) OnACLCheck(*mochi.Client, string, bool) bool { return true }
