package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSweepRefusesPlantedState: a state file in a killed run's cluster
// directory that names another directory is refused (the sweep would
// remove the directory it names), and nothing is removed; the NATS
// clusters share the check (localcluster.InDir).
func TestSweepRefusesPlantedState(t *testing.T) {
	base := t.TempDir()
	victim := filepath.Join(t.TempDir(), "precious")
	if err := os.Mkdir(victim, 0o700); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(base, "dqbench-kafka-cluster-1")
	if err := os.Mkdir(planted, 0o700); err != nil {
		t.Fatal(err)
	}
	state := fmt.Sprintf(`{"dir": %q, "owner": %d}`, victim, 1<<30)
	if err := os.WriteFile(filepath.Join(planted, "state.json"), []byte(state), 0o600); err != nil {
		t.Fatal(err)
	}
	stopped, err := Sweep(filepath.Join(base, "dqbench-kafka-cluster-*"))
	if len(stopped) != 0 || err == nil || !strings.Contains(err.Error(), "it names the directory "+victim+", not its own") {
		t.Errorf("Sweep = %v, %v; want nothing stopped and the refusal", stopped, err)
	}
	for _, d := range []string{victim, planted} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
}
