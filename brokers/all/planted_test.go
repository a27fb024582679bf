package all

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dqbench/dqbench/brokers"
)

// TestStandingRefusesPlantedDirectories: "brokers down" and "brokers
// status" of every kind refuse a well-known directory another local user
// could have made (here the dqbench-brokers directory above it, writable
// by anyone), whose state.json names a directory to remove: nothing is
// removed.
func TestStandingRefusesPlantedDirectories(t *testing.T) {
	run := t.TempDir()
	// The RabbitMQ nodes' user (rabbitmq, when dqbench runs as root) must
	// reach the runtime directory, or the cluster's state moves to the
	// temporary directory and the planted one is never looked at.
	for _, d := range []string{run, filepath.Dir(run)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("XDG_RUNTIME_DIR", run)
	victim := filepath.Join(t.TempDir(), "precious")
	if err := os.Mkdir(victim, 0o700); err != nil {
		t.Fatal(err)
	}
	for kind, s := range Standing {
		dir := brokers.StandingDir(string(kind))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		state := `{"dir": "` + victim + `", "pid": 0, "nodes": [{"name": "n", "pid": 0}]}`
		if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte(state), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Dir(dir), 0o777); err != nil {
			t.Fatal(err)
		}
		for what, call := range map[string]func() (brokers.StandingState, error){"down": s.Down, "status": s.Status} {
			if _, err := call(); err == nil || !strings.Contains(err.Error(), "dqbench will not use ") || !strings.Contains(err.Error(), "writable by") {
				t.Errorf("brokers %s %s: %v; want a refusal", what, kind, err)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "state.json")); err != nil {
			t.Errorf("%s: %v", kind, err)
		}
	}
	if _, err := os.Stat(victim); err != nil {
		t.Errorf("%s: %v", victim, err)
	}
}
