package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// The CLI's JSON, as rabbitmqctl 3.10 prints it, sometimes after a
// warning line.
func TestRunningNodes(t *testing.T) {
	for _, tc := range []struct {
		out  string
		want []string
		ok   bool
	}{
		{`{"alarms":[],"disk_nodes":["a@localhost","b@localhost"],"running_nodes":["a@localhost","b@localhost"]}`, []string{"a@localhost", "b@localhost"}, true},
		{"Warning: something\n{\"running_nodes\":[\"a@localhost\"]}", []string{"a@localhost"}, true},
		{"Error: unable to perform an operation on node", nil, false},
	} {
		got, err := runningNodes(tc.out)
		if (err == nil) != tc.ok || !slices.Equal(got, tc.want) {
			t.Errorf("runningNodes(%q) = %v, %v; want %v (ok %v)", tc.out, got, err, tc.want, tc.ok)
		}
	}
}

func TestStateDir(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/7")
	if got := StateDir(); got != "/run/user/7/dqbench-brokers/rabbitmq" {
		t.Errorf("StateDir() = %s", got)
	}
}

// other is a user the nodes run as who is neither the owner of the test's
// directories nor in their group (as when root runs them as rabbitmq).
func other() runAs {
	uid, gid := os.Getuid()+4242, os.Getgid()+4242
	return runAs{cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, uid: uid, gid: gid, name: "rabbitmq"}
}

// openDir is a temporary directory anyone may enter, as /tmp is.
func openDir(t *testing.T) string {
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestReach: the nodes' user must be able to enter every directory above
// theirs. A 0700 XDG_RUNTIME_DIR stops another user; the current user, or
// a directory not made yet, does not.
func TestReach(t *testing.T) {
	private := filepath.Join(openDir(t), "run-user-0")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	below := filepath.Join(private, "dqbench-brokers")
	err := other().reach(below)
	if !errors.Is(err, ErrNoAccess) || !strings.Contains(err.Error(), "user rabbitmq, who cannot enter "+private+" (mode 0700") {
		t.Errorf("reach below a 0700 directory: %v, want ErrNoAccess naming %s and its mode", err, private)
	}
	if err := (runAs{uid: os.Getuid(), gid: os.Getgid()}).reach(below); err != nil {
		t.Errorf("the current user: %v", err)
	}
	if err := os.Chmod(private, 0o711); err != nil {
		t.Fatal(err)
	}
	if err := other().reach(filepath.Join(below, "not", "made", "yet")); err != nil {
		t.Errorf("reach below a 0711 directory: %v", err)
	}
}

// TestStateDirOfAnotherUser: when the nodes run as a user who cannot
// enter XDG_RUNTIME_DIR (root's, 0700), brokers up keeps its cluster under
// the temporary directory, which that user can enter; else under
// XDG_RUNTIME_DIR.
func TestStateDirOfAnotherUser(t *testing.T) {
	xdg := filepath.Join(t.TempDir(), "xdg")
	if err := os.Mkdir(xdg, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", xdg)
	if got, want := stateDir(other()), filepath.Join(os.TempDir(), "dqbench-brokers", "rabbitmq"); got != want {
		t.Errorf("stateDir = %s, want %s", got, want)
	}
	if got, want := stateDir(runAs{uid: os.Getuid(), gid: os.Getgid()}), filepath.Join(xdg, "dqbench-brokers", "rabbitmq"); got != want {
		t.Errorf("stateDir of the current user = %s, want %s", got, want)
	}
}

// A pid from a state file that is not (or no longer) a process of the
// cluster is never killed.
func TestKillGroupSparesOtherPrograms(t *testing.T) {
	c := &Cluster{Dir: t.TempDir()}
	if c.groupRuns(1) {
		t.Fatal("pid 1 counted as a process of the cluster")
	}
	if Running(&Cluster{Dir: t.TempDir(), EPMDPID: 1, Nodes: []Node{{PID: 1}}}) {
		t.Error("Running: pid 1 counted as a process of the cluster")
	}
}
