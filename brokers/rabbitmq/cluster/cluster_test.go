package cluster

import (
	"slices"
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
