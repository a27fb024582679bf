package mqtt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/internal/private"
)

// StandingPort is where the Mosquitto "dqbench brokers up mqtt" starts
// listens (on 127.0.0.1) when the port is free, so a scenario can name
// it: the one after MQTT's own 1883. When it is taken, a free port.
const StandingPort = 1884

// Standing is the Mosquitto "dqbench brokers up mqtt" (or mosquitto) leaves
// running: the managed mode's Mosquitto with the default limits, for runs
// with mode: external and for trying a client by hand. A run with mode:
// managed still starts a Mosquitto of its own per variant (in milliseconds),
// with the variant's limits.
var Standing = brokers.Standing{
	Name: "mosquitto",
	Noun: "broker",
	Doc: "a Mosquitto from the installed mosquitto, with Mosquitto's default limits, on " +
		"127.0.0.1:" + strconv.Itoa(StandingPort) + " (a free port when that one is taken): for runs with mode: external and " +
		"clients tried by hand. Runs with mode: managed still start their own per variant.",
	Starting: "starting Mosquitto from the installed mosquitto...",
	Use: func(st brokers.StandingState, down string) string {
		url := "tcp://127.0.0.1:" + strconv.Itoa(StandingPort)
		if len(st.Nodes) > 0 {
			url = st.Nodes[0].URL
		}
		return fmt.Sprintf("Runs with mode: external and addresses: [%s] use it until %q.\n"+
			"Runs with mode: managed still start a Mosquitto of their own per variant.", url, down)
	},
	Up:     standingUp,
	Down:   standingDown,
	Status: standingStatus,
}

// standingFile is the state of the standing Mosquitto, in its directory.
type standingFile struct {
	PID      int           `json:"pid"`
	Addr     string        `json:"addr"`
	Started  time.Time     `json:"started"`
	StartDur time.Duration `json:"start_duration"`
}

const standingStateFile = "state.json"

func standingDir() string { return brokers.StandingDir(string(catalog.MQTT)) }

// loadStanding reads the state of the standing Mosquitto in dir, when dir
// and its state file are the user's alone (brokers.CheckStanding,
// private.File): stop kills the pid it names and removes dir.
func loadStanding(dir string) (standingFile, error) {
	var f standingFile
	path := filepath.Join(dir, standingStateFile)
	err := brokers.CheckStanding(dir)
	if err == nil {
		err = private.File(path)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return f, brokers.ErrNoStanding
	}
	if err != nil {
		return f, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return f, err
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return f, fmt.Errorf("read %s: %w", filepath.Join(dir, standingStateFile), err)
	}
	return f, nil
}

// state says whether the process in f still runs and answers.
func (f standingFile) state(dir string) brokers.StandingState {
	running := f.ours(dir) && dial(context.Background(), "tcp://"+f.Addr) == nil
	return brokers.StandingState{Dir: dir, Started: f.Started, StartDur: f.StartDur, Nodes: []brokers.StandingNode{
		{Name: fmt.Sprintf("mosquitto (pid %d)", f.PID), Running: running, URL: "tcp://" + f.Addr},
	}}
}

// ours: process f.PID lives and is the Mosquitto started on dir's
// configuration (not another process that reused the pid). Where /proc
// is missing, a live process is taken for it.
func (f standingFile) ours(dir string) bool {
	if f.PID <= 0 || syscall.Kill(f.PID, 0) != nil {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", f.PID))
	if err != nil {
		_, noProc := os.Stat("/proc/self")
		return noProc != nil
	}
	return strings.Contains(string(cmdline), filepath.Join(dir, "mosquitto.conf"))
}

// stop ends the process (SIGTERM, then SIGKILL after 5 s) and removes dir.
func (f standingFile) stop(dir string) error {
	if f.ours(dir) {
		_ = syscall.Kill(-f.PID, syscall.SIGTERM) // its own session: its group
		deadline := time.Now().Add(5 * time.Second)
		for f.ours(dir) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if f.ours(dir) {
			_ = syscall.Kill(-f.PID, syscall.SIGKILL)
		}
	}
	return os.RemoveAll(dir)
}

func standingUp(ctx context.Context, starting func()) (brokers.StandingState, bool, error) {
	dir := standingDir()
	old, err := loadStanding(dir)
	if errors.Is(err, private.ErrNotPrivate) {
		return brokers.StandingState{}, false, err
	}
	if err == nil {
		if st := old.state(dir); st.Running() == len(st.Nodes) {
			return st, true, nil
		}
		if err := old.stop(dir); err != nil {
			return brokers.StandingState{}, false, fmt.Errorf("stop the broken Mosquitto in %s: %w", dir, err)
		}
	}
	bin, err := mosquittoBinary()
	if err != nil {
		return brokers.StandingState{}, false, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return brokers.StandingState{}, false, err
	}
	if err := private.MkdirAll(dir); err != nil {
		return brokers.StandingState{}, false, fmt.Errorf("standing Mosquitto directory: %w", err)
	}
	port := StandingPort
	if ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
		ln.Close()
	} else if port, err = freePort(); err != nil {
		return brokers.StandingState{}, false, err
	}
	m := &mosquitto{bin: bin, dir: dir, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	if _, err := writeConf(dir, port, catalog.MQTTSettings{}); err != nil {
		os.RemoveAll(dir)
		return brokers.StandingState{}, false, err
	}
	starting()
	began := time.Now()
	if err := m.spawn(true); err != nil {
		os.RemoveAll(dir)
		return brokers.StandingState{}, false, err
	}
	f := standingFile{PID: m.cmd.Process.Pid, Addr: m.addr}
	if err := m.waitReady(ctx); err != nil {
		_ = f.stop(dir)
		return brokers.StandingState{}, false, err
	}
	f.Started, f.StartDur = time.Now(), time.Since(began)
	b, err := json.MarshalIndent(f, "", "  ")
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, standingStateFile), b, 0o600)
	}
	if err != nil {
		_ = f.stop(dir)
		return brokers.StandingState{}, false, fmt.Errorf("write the standing Mosquitto's state: %w", err)
	}
	return f.state(dir), false, nil
}

func standingDown() (brokers.StandingState, error) {
	dir := standingDir()
	f, err := loadStanding(dir)
	if err != nil {
		return brokers.StandingState{}, err
	}
	st := f.state(dir)
	for i := range st.Nodes {
		st.Nodes[i].Running = false
	}
	return st, f.stop(dir)
}

func standingStatus() (brokers.StandingState, error) {
	dir := standingDir()
	f, err := loadStanding(dir)
	if err != nil {
		return brokers.StandingState{}, err
	}
	return f.state(dir), nil
}

// Installed says whether the mosquitto binary mode managed and "dqbench
// brokers up mqtt" start is installed, and if not, how to install it.
func Installed() error {
	_, err := mosquittoBinary()
	return err
}
