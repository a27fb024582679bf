package cluster

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dqbench/dqbench/internal/private"
)

// deadPID is a pid no process has.
const deadPID = 1 << 30

// TestSweepRefusesPlantedState: the sweep of killed runs' clusters
// ($TMPDIR/dqbench-rabbitmq-*) stops and removes only a cluster whose
// directory and state file are the user's alone and whose state names
// that very directory; a state file another user planted, naming another
// directory, is refused and nothing is removed.
func TestSweepRefusesPlantedState(t *testing.T) {
	base := t.TempDir()
	victim := filepath.Join(t.TempDir(), "precious")
	if err := os.Mkdir(victim, 0o700); err != nil {
		t.Fatal(err)
	}
	plant := func(name, dir string) string {
		d := filepath.Join(base, "dqbench-rabbitmq-"+name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if dir == "" {
			dir = d
		}
		state := fmt.Sprintf(`{"dir": %q, "owner": %d, "nodes": [{"name": "x@localhost", "pid": %d}]}`, dir, deadPID, deadPID)
		if err := os.WriteFile(filepath.Join(d, stateFile), []byte(state), 0o600); err != nil {
			t.Fatal(err)
		}
		return d
	}
	elsewhere := plant("elsewhere", victim)
	foreign := plant("foreign", "")
	open := plant("open", "")
	os.Chmod(open, 0o777)
	linked := plant("linked", "")
	os.Rename(filepath.Join(linked, stateFile), filepath.Join(linked, "real.json"))
	os.Symlink(filepath.Join(linked, "real.json"), filepath.Join(linked, stateFile))
	ours := plant("ours", "")
	saved := private.Owner
	t.Cleanup(func() { private.Owner = saved })
	private.Owner = func(path string, fi fs.FileInfo) (int, bool) {
		if path == foreign {
			return 4242, true
		}
		return saved(path, fi)
	}

	stopped, err := Sweep(filepath.Join(base, "dqbench-rabbitmq-*"))
	if len(stopped) != 1 || stopped[0] != ours || exists(ours) {
		t.Errorf("stopped %v; want only %s, removed", stopped, ours)
	}
	for _, want := range []string{
		"left alone: dqbench will not use " + filepath.Join(elsewhere, stateFile) + ": it names the directory " + victim + ", not its own",
		"left alone: dqbench will not use " + foreign + ": it belongs to uid 4242, not to you",
		"left alone: dqbench will not use " + open + ": it is writable by group or others",
		"left alone: dqbench will not use " + filepath.Join(linked, stateFile) + ": it is a symbolic link",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Sweep's error %v\ndoes not say %q", err, want)
		}
	}
	for _, d := range []string{victim, elsewhere, foreign, open, linked} {
		if !exists(d) {
			t.Errorf("%s was removed", d)
		}
	}
	if o := Orphans(filepath.Join(base, "dqbench-rabbitmq-*")); len(o) != 0 {
		t.Errorf("Orphans lists refused clusters: %v", o)
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
