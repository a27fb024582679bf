package leftover

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dqbench/dqbench/internal/private"
)

// deadLedger writes a ledger of a dead process (pid 1 runs, but did not
// start at time 0) in the ledger directory, listing entries as created.
func deadLedger(t *testing.T, entries ...Entry) string {
	t.Helper()
	var text string
	for _, e := range entries {
		text += `{"op":"+","kind":"` + string(e.Kind) + `","name":"` + e.Name + `"}` + "\n"
	}
	path := filepath.Join(LedgerDir(), "1-0.jsonl")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// madeDir is a directory as MkdirTemp makes it: the user's, with the
// marker.
func madeDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "dqbench-stores-1")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, Marker), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// asOwner makes the paths for which foreign reports true belong to uid
// 4242 (another local user) for the test.
func asOwner(t *testing.T, foreign func(path string) bool) {
	t.Helper()
	saved := private.Owner
	t.Cleanup(func() { private.Owner = saved })
	private.Owner = func(path string, fi fs.FileInfo) (int, bool) {
		if foreign(path) {
			return 4242, true
		}
		return saved(path, fi)
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// TestSweepRefusesALedgerNotTheUsers: a ledger directory another user
// made (here: of another owner, writable by others, a symbolic link) is
// not read: the sweep says why and removes nothing it lists; no run
// writes its ledger there.
func TestSweepRefusesALedgerNotTheUsers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, ledger string)
		want  string
	}{
		{"another owner", func(t *testing.T, ledger string) {
			asOwner(t, func(p string) bool { return p == ledger })
		}, "it belongs to uid 4242, not to you"},
		{"world-writable", func(t *testing.T, ledger string) {
			if err := os.Chmod(ledger, 0o777); err != nil {
				t.Fatal(err)
			}
		}, "it is writable by group or others (mode 0777)"},
		{"a symbolic link", func(t *testing.T, ledger string) {
			real := ledger + "-real"
			if err := os.Rename(ledger, real); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(real, ledger); err != nil {
				t.Fatal(err)
			}
		}, "it is a symbolic link"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ledger := filepath.Join(t.TempDir(), "dqbench-ledger-0")
			t.Setenv("DQBENCH_LEDGER_DIR", ledger)
			if err := os.Mkdir(ledger, 0o700); err != nil {
				t.Fatal(err)
			}
			victim := madeDir(t)
			deadLedger(t, Entry{Kind: Dir, Name: victim})
			tc.setup(t, ledger)

			removed, failed, err := Sweep(context.Background(), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "set DQBENCH_LEDGER_DIR") {
				t.Errorf("Sweep: %v; want a refusal saying %q and what to do", err, tc.want)
			}
			if len(removed) != 0 || len(failed) != 0 || !exists(victim) {
				t.Errorf("removed %v, failed %v, %s still there: %v; want nothing touched", removed, failed, victim, exists(victim))
			}
			if o, err := Orphans(); len(o) != 0 || err == nil {
				t.Errorf("Orphans = %v, %v; want none and the refusal", o, err)
			}
			if f, err := ForgetOrphans(); len(f) != 0 || err == nil || !exists(filepath.Join(ledger, "1-0.jsonl")) {
				t.Errorf("ForgetOrphans = %v, %v; want nothing forgotten and the refusal", f, err)
			}
		})
	}
}

// TestSweepRemovesOnlyWhatDqbenchMade: in the user's own ledger, a line
// naming a directory without dqbench's marker, a directory of another
// owner, a symbolic link, or a file not named dqbench-* is refused, and
// the line kept; a marked directory of the user's is removed.
func TestSweepRemovesOnlyWhatDqbenchMade(t *testing.T) {
	t.Setenv("DQBENCH_LEDGER_DIR", filepath.Join(t.TempDir(), "ledger"))
	if err := private.MkdirAll(LedgerDir()); err != nil {
		t.Fatal(err)
	}
	unmarked := filepath.Join(t.TempDir(), "precious")
	if err := os.Mkdir(unmarked, 0o700); err != nil {
		t.Fatal(err)
	}
	foreign := madeDir(t)
	asOwner(t, func(p string) bool { return p == foreign })
	link := filepath.Join(t.TempDir(), "dqbench-link")
	if err := os.Symlink(madeDir(t), link); err != nil {
		t.Fatal(err)
	}
	notOurs := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(notOurs, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ours := madeDir(t)
	history := filepath.Join(t.TempDir(), "dqbench-history-1.jsonl")
	if err := os.WriteFile(history, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	deadLedger(t, Entry{Kind: Dir, Name: unmarked}, Entry{Kind: Dir, Name: foreign}, Entry{Kind: Dir, Name: link},
		Entry{Kind: File, Name: notOurs}, Entry{Kind: Dir, Name: ours}, Entry{Kind: File, Name: history})

	removed, failed, err := Sweep(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 2 || removed[0].Name != ours || removed[1].Name != history || exists(ours) || exists(history) {
		t.Errorf("removed %v; want %s and %s, gone", removed, ours, history)
	}
	want := []string{
		"dir " + unmarked + ": it holds no .dqbench-made: dqbench did not make it",
		"dir " + foreign + ": dqbench will not use " + foreign + ": it belongs to uid 4242, not to you",
		"dir " + link + ": dqbench will not use " + link + ": it is a symbolic link",
		"file " + notOurs + ": not a file dqbench makes (dqbench-*), so it is left alone",
	}
	if len(failed) != len(want) {
		t.Fatalf("failed %v; want %d refusals", failed, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(failed[i].Error(), w) {
			t.Errorf("failed[%d] = %v\nwant %s...", i, failed[i], w)
		}
	}
	for _, p := range []string{unmarked, foreign, link, notOurs} {
		if !exists(p) {
			t.Errorf("%s was removed", p)
		}
	}
	listed := map[string]bool{}
	orphans, _ := Orphans()
	for _, e := range orphans {
		listed[e.Name] = true
	}
	for _, p := range []string{unmarked, foreign, link, notOurs} {
		if !listed[p] {
			t.Errorf("%s is no longer listed: %v", p, orphans)
		}
	}
}

// TestMkdirTempMarks: a directory MkdirTemp makes is private, marked and
// noted, and a sweep after the process's death removes it.
func TestMkdirTempMarks(t *testing.T) {
	t.Setenv("DQBENCH_LEDGER_DIR", filepath.Join(t.TempDir(), "ledger"))
	t.Setenv("TMPDIR", t.TempDir())
	dir, err := MkdirTemp("dqbench-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := private.Dir(dir); err != nil {
		t.Error(err)
	}
	if err := removeDir(dir); err != nil || exists(dir) {
		t.Errorf("removeDir of a directory MkdirTemp made: %v (still there: %v)", err, exists(dir))
	}
	if fi, err := os.Stat(LedgerDir()); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the ledger directory: %v, %v; want it made 0700", fi, err)
	}
}
