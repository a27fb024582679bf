// Package localcluster is what dqbench's managed clusters share: free
// loopback ports, processes started in their own process group that die
// with dqbench (Pdeathsig) or, for "dqbench brokers up", in a session of
// their own, the wait for a port, the end of a log for an error message,
// the state file that lets another dqbench process find a cluster, and
// the sweep of clusters whose run was killed.
//
// A cluster package (brokers/kafka/cluster, brokers/nats/cluster) keeps
// what is its broker's own: its configuration, its readiness check, its
// node names.
package localcluster

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
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dqbench/dqbench/internal/private"
)

// FreePorts asks the kernel for n free TCP ports on 127.0.0.1.
func FreePorts(n int) ([]int, error) {
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

// RandomHex is n random bytes in hex: names unique on the machine.
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Start starts cmd as a node of a cluster. An owned node (a run's) leads
// its own process group and is killed when dqbench dies (Pdeathsig); a
// standing one ("brokers up") gets a session of its own and outlives it.
// exited is closed once the process has been reaped.
func Start(cmd *exec.Cmd, owned bool) (exited <-chan struct{}, err error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if owned {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	return done, nil
}

// WaitPort waits until 127.0.0.1:port accepts a connection, while the
// process has not exited (exited may be nil: not our child).
func WaitPort(ctx context.Context, port int, limit time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(limit)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listens on %s after %s", addr, limit)
		}
		select {
		case <-exited:
			return fmt.Errorf("the process exited before it listened on %s", addr)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Listening reports whether something accepts connections on
// 127.0.0.1:port.
func Listening(port int) bool {
	conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// Tail is the end of a log file, for an error message ("" when there is
// nothing to show).
func Tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return ""
	}
	if len(b) > 1500 {
		b = b[len(b)-1500:]
	}
	return fmt.Sprintf("; the end of %s:\n%s", path, strings.TrimSpace(string(b)))
}

// Gone reports whether process pid is gone or a zombie.
func Gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z'
}

// Ours reports whether pid is a live process of the cluster in dir: one
// of its arguments (not the program's name) is a path inside dir. A pid from an old state file may
// belong to another program by now, and a broker the machine runs for
// itself is never one of ours.
func Ours(pid int, dir string) bool {
	if pid <= 1 || dir == "" || Gone(pid) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	return strings.Contains(string(b), "\x00"+filepath.Join(dir, "")+string(filepath.Separator))
}

// KillGroup SIGKILLs the process group pid leads, when pid is a node of
// the cluster in dir, and waits (10 s at most) until it is gone; exited
// is the node's from Start, or nil when it is not this process's child.
func KillGroup(pid int, dir string, exited <-chan struct{}) error {
	if !Ours(pid, dir) {
		return nil
	}
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill process group %d: %w", pid, err)
	}
	if exited != nil { // our child: wait until it is reaped
		select {
		case <-exited:
			return nil
		case <-time.After(10 * time.Second):
			return fmt.Errorf("node pid %d still runs 10s after SIGKILL", pid)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for Ours(pid, dir) {
		if time.Now().After(deadline) {
			return fmt.Errorf("node pid %d still runs 10s after SIGKILL", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// Signal sends sig to the process group pid leads, when pid is a node of
// the cluster in dir (SIGSTOP freezes a node, SIGCONT thaws it).
func Signal(pid int, dir string, sig syscall.Signal) error {
	if !Ours(pid, dir) {
		return fmt.Errorf("pid %d is not a running node of the cluster in %s", pid, dir)
	}
	if err := syscall.Kill(-pid, sig); err != nil {
		return fmt.Errorf("signal process group %d: %w", pid, err)
	}
	return nil
}

// StateFile is the name of a cluster's state file in its directory.
const StateFile = "state.json"

// Save writes v as the state file of the cluster in dir, atomically, so
// that another dqbench process can find and stop the cluster.
func Save(dir string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, StateFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write cluster state: %w", err)
	}
	return os.Rename(tmp, filepath.Join(dir, StateFile))
}

// Load reads the state file of the cluster in dir into v; the error wraps
// os.ErrNotExist when there is none, and private.ErrNotPrivate when dir or
// its state file is not the user's alone (see ReadState).
func Load(dir string, v any) error {
	b, err := ReadState(dir)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("read %s: %w", filepath.Join(dir, StateFile), err)
	}
	return nil
}

// ReadState reads the state file of the cluster in dir, when dir and the
// file are the user's alone (package private; dir may also belong to one
// of the users also, the nodes' own): a state file another user planted
// would name processes to kill and a directory to remove. A dir that is
// not there is os.ErrNotExist.
func ReadState(dir string, also ...int) ([]byte, error) {
	if err := private.Dir(dir, also...); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, StateFile)
	if err := private.File(path); err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}

// InDir checks that a state file read in dir names dir as the cluster's
// directory (stated): Stop removes the directory the state names, so one
// that names another is refused.
func InDir(dir, stated string) error {
	if filepath.Clean(stated) != filepath.Clean(dir) {
		return &private.Error{Path: filepath.Join(dir, StateFile), Why: fmt.Sprintf("it names the directory %s, not its own: dqbench writes its own", stated)}
	}
	return nil
}

// Orphans lists the directories matching glob whose cluster belonged to a
// run that is gone: owner reads a directory's state and returns the pid of
// the run that owns it (0 for a standing cluster, which is nobody's
// orphan), or why it could not. refused says which directories were left
// alone because they, or their state, are not the user's alone
// (private.ErrNotPrivate); one with no state to read is no orphan.
func Orphans(glob string, owner func(dir string) (pid int, err error)) (out []string, refused []error) {
	dirs, _ := filepath.Glob(glob)
	for _, dir := range dirs {
		pid, err := owner(dir)
		switch {
		case errors.Is(err, private.ErrNotPrivate):
			refused = append(refused, fmt.Errorf("left alone: %w", err))
		case err == nil && pid > 0 && !Alive(pid):
			out = append(out, dir)
		}
	}
	return out, refused
}

// Alive reports whether process pid runs.
func Alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
