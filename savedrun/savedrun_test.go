package savedrun_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/check/checktest"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/savedrun"
	"github.com/dqbench/dqbench/scenario"
)

func TestCheckOut(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "somefile")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	readOnly := filepath.Join(dir, "ro")
	if err := os.Mkdir(readOnly, 0o555); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		out     string
		wantErr string // empty: no error
		root    bool   // the case needs permissions to be enforced
	}{
		{name: "fresh nested dir", out: filepath.Join(dir, "runs", "new")},
		{name: "existing dir", out: dir},
		{name: "a file", out: file, wantErr: "is a file, not a directory"},
		{name: "under a file", out: filepath.Join(file, "sub"), wantErr: "--out " + filepath.Join(file, "sub")},
		{name: "read-only dir", out: readOnly, wantErr: "is not writable", root: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.root && os.Geteuid() == 0 {
				t.Skip("running as root: permissions are not enforced")
			}
			err := savedrun.CheckOut(tc.out)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("CheckOut(%s): %v", tc.out, err)
				}
				entries, err := os.ReadDir(tc.out)
				if err != nil {
					t.Fatalf("CheckOut did not leave a directory at %s: %v", tc.out, err)
				}
				for _, e := range entries {
					if strings.HasPrefix(e.Name(), ".dqbench-write-test") {
						t.Errorf("CheckOut left its write test %s behind", e.Name())
					}
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("CheckOut(%s) = %v, want an error containing %q", tc.out, err, tc.wantErr)
			}
		})
	}
}

func TestCreateRefusesASavedRunUnlessForced(t *testing.T) {
	out := t.TempDir()
	d, err := savedrun.Create(out, "run", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.History.WriteString("{}\n"); err != nil {
		t.Fatal(err)
	}
	if err := d.Finish(parse(t), check.Meta{Scenario: "saved"}, nil, nil); err != nil {
		t.Fatal(err)
	}

	_, err = savedrun.Create(out, "run", false)
	if !errors.Is(err, savedrun.ErrExists) {
		t.Fatalf("Create over a saved run = %v, want ErrExists", err)
	}
	if !strings.Contains(err.Error(), "--force") || !strings.Contains(err.Error(), filepath.Join(out, "run")) {
		t.Errorf("error %q should name the directory and --force", err)
	}
	// Another name under the same out is fine.
	other, err := savedrun.Create(out, "run-2", false)
	if err != nil {
		t.Fatalf("Create of a new name: %v", err)
	}
	other.History.Close()

	forced, err := savedrun.Create(out, "run", true)
	if err != nil {
		t.Fatalf("Create with force: %v", err)
	}
	defer forced.History.Close()
	left, err := os.ReadDir(forced.Path)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{savedrun.HistoryFile}) {
		t.Errorf("after a forced Create, %s holds %v, want only a fresh %s", forced.Path, names, savedrun.HistoryFile)
	}
	if fi, err := os.Stat(filepath.Join(forced.Path, savedrun.HistoryFile)); err != nil || fi.Size() != 0 {
		t.Errorf("forced Create kept the old history (%v, %v)", fi, err)
	}
}

const savedYAML = `version: 1
name: saved
seed: 3
messages: 3
broker:
  kind: kafka
variants:
  - name: none
    strategy: none
    expect:
      duplicates: ">0"
      lost: 0
  - name: dedup
    strategy: dedup-table
    expect:
      duplicates: 0
`

func parse(t *testing.T) *scenario.Scenario {
	t.Helper()
	s, err := scenario.Parse("saved.yaml", []byte(savedYAML))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// events: intents 1..3 published and confirmed in both variants; in none,
// intent 2 is delivered twice and applied twice; in dedup the redelivery
// of intent 2 is skipped.
func events() []history.Event {
	var out []history.Event
	for _, v := range []string{"none", "dedup"} {
		for i := 1; i <= 3; i++ {
			out = append(out,
				history.Event{Variant: v, Type: history.Publish, Intent: i, Attempt: 1},
				history.Event{Variant: v, Type: history.Confirm, Intent: i, Attempt: 1},
				history.Event{Variant: v, Type: history.Deliver, Intent: i, Attempt: 1, Consumer: 1, Position: "0@" + string(rune('0'+i))},
				history.Event{Variant: v, Type: history.Effect, Intent: i, Applied: true},
			)
		}
		out = append(out,
			history.Event{Variant: v, Type: history.Deliver, Intent: 2, Attempt: 2, Consumer: 2, Position: "0@2", Redelivered: true},
			history.Event{Variant: v, Type: history.Effect, Intent: 2, Applied: v == "none", Reason: "seen"},
			history.Event{Variant: v, Type: history.Drain, Drained: true},
		)
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	out := t.TempDir()
	s := parse(t)
	d, err := savedrun.Create(out, s.Name, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := history.Write(d.History, events()); err != nil {
		t.Fatal(err)
	}
	meta := check.Meta{Scenario: s.Name, Seed: s.Seed, Messages: s.Messages, Broker: "kafka (test)", Duration: 1500 * time.Millisecond}
	audits := map[string]history.Audit{
		"none":  {Applied: map[int]int{1: 1, 2: 2, 3: 1}},
		"dedup": {Applied: map[int]int{1: 1, 2: 1, 3: 1}},
	}
	judged := check.Run{Meta: meta, Passed: true}
	if err := d.Finish(s, meta, audits, &judged); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{savedrun.ScenarioFile, savedrun.HistoryFile, savedrun.AuditFile, savedrun.MetaFile, savedrun.ResultFile} {
		if _, err := os.Stat(filepath.Join(d.Path, f)); err != nil {
			t.Errorf("saved run lacks %s: %v", f, err)
		}
	}

	r, err := savedrun.Load(d.Path)
	if err != nil {
		t.Fatal(err)
	}
	if r.Scenario.Name != s.Name || r.Scenario.Seed != s.Seed || r.Scenario.Messages != s.Messages || len(r.Scenario.Variants) != 2 {
		t.Errorf("scenario read back as %s seed %d messages %d, %d variants; want %s seed %d messages %d, 2 variants",
			r.Scenario.Name, r.Scenario.Seed, r.Scenario.Messages, len(r.Scenario.Variants), s.Name, s.Seed, s.Messages)
	}
	if r.Meta != meta {
		t.Errorf("meta read back as %+v, want %+v", r.Meta, meta)
	}
	if !reflect.DeepEqual(r.Audits, audits) {
		t.Errorf("audits read back as %v, want %v", r.Audits, audits)
	}

	run, err := r.Judge()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]int{
		"none":  {"attempted": 3, "acknowledged": 3, "delivered": 3, "redelivered": 1, "effects": 4, "duplicates": 1, "lost": 0},
		"dedup": {"attempted": 3, "acknowledged": 3, "delivered": 3, "redelivered": 1, "effects": 3, "duplicates": 0, "lost": 0},
	}
	if len(run.Variants) != 2 {
		t.Fatalf("judged %d variants, want 2", len(run.Variants))
	}
	for _, v := range run.Variants {
		if diff := checktest.DiffCounts(v.Counts, want[v.Name]); diff != "" {
			t.Errorf("variant %s: %s", v.Name, diff)
		}
		if !v.Passed || len(v.Invalid) > 0 {
			t.Errorf("variant %s: passed %v, invalid %v; want a pass", v.Name, v.Passed, v.Invalid)
		}
	}
	if !run.Passed || run.Meta != meta {
		t.Errorf("run passed %v meta %+v, want a pass with the saved meta", run.Passed, run.Meta)
	}
}

func TestLoadBrokenRun(t *testing.T) {
	out := t.TempDir()
	d, err := savedrun.Create(out, "run", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Finish(parse(t), check.Meta{}, map[string]history.Audit{}, nil); err != nil {
		t.Fatal(err)
	}
	audit := filepath.Join(d.Path, savedrun.AuditFile)
	if err := os.WriteFile(audit, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := savedrun.Load(d.Path); err == nil || !strings.Contains(err.Error(), audit) {
		t.Errorf("Load with a broken %s = %v, want an error naming it", audit, err)
	}
	if err := os.Remove(filepath.Join(d.Path, savedrun.ScenarioFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := savedrun.Load(d.Path); err == nil {
		t.Error("Load without scenario.yaml succeeded")
	}
}

func TestFind(t *testing.T) {
	parent := t.TempDir()
	for _, name := range []string{"b", "a"} {
		d, err := savedrun.Create(parent, name, false)
		if err != nil {
			t.Fatal(err)
		}
		d.History.Close()
	}
	// Neither a directory without a history nor a file is a run.
	if err := os.Mkdir(filepath.Join(parent, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(parent, "notes.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := savedrun.Find(parent)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(parent, "a"), filepath.Join(parent, "b")}; !slices.Equal(got, want) {
		t.Errorf("Find(parent) = %v, want %v", got, want)
	}

	// A run directory is itself.
	one := filepath.Join(parent, "a")
	if got, err := savedrun.Find(one); err != nil || !slices.Equal(got, []string{one}) {
		t.Errorf("Find(run dir) = %v, %v; want [%s]", got, err, one)
	}

	none := filepath.Join(parent, "empty")
	if _, err := savedrun.Find(none); err == nil || !strings.Contains(err.Error(), none) || !strings.Contains(err.Error(), "no saved run") {
		t.Errorf("Find(dir without runs) = %v, want an error naming %s", err, none)
	}
	missing := filepath.Join(parent, "missing")
	if _, err := savedrun.Find(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Find(missing dir) = %v, want an error naming %s", err, missing)
	}
}

func TestDiscard(t *testing.T) {
	out := t.TempDir()
	d, err := savedrun.Create(out, "run", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Discard(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.Path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Discard left %s behind (%v)", d.Path, err)
	}
	if _, err := savedrun.Create(out, "run", false); err != nil {
		t.Errorf("Create after Discard: %v", err)
	}

	// A directory that holds something else stays, without the history.
	d, err = savedrun.Create(out, "kept", false)
	if err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(d.Path, "notes.txt")
	if err := os.WriteFile(mine, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := d.Discard(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(mine); err != nil {
		t.Errorf("Discard removed a file it did not make: %v", err)
	}
	if _, err := os.Stat(filepath.Join(d.Path, savedrun.HistoryFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Discard kept the history file (%v)", err)
	}
}

// TestLoadHostileRun: a saved run from someone else cannot make Load hang
// or read without end: a file that is a FIFO or a link to /dev/zero is
// refused before it is opened, an audit larger than the run can have
// written is refused after a bounded read, and so is an impossible meta.
func TestLoadHostileRun(t *testing.T) {
	saved := func(t *testing.T) string {
		t.Helper()
		d, err := savedrun.Create(t.TempDir(), "run", false)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Finish(parse(t), check.Meta{Messages: 10}, map[string]history.Audit{}, nil); err != nil {
			t.Fatal(err)
		}
		return d.Path
	}
	for _, name := range []string{savedrun.ScenarioFile, savedrun.HistoryFile, savedrun.AuditFile, savedrun.MetaFile} {
		t.Run(name+" links to /dev/zero", func(t *testing.T) {
			dir := saved(t)
			path := filepath.Join(dir, name)
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("/dev/zero", path); err != nil {
				t.Skip(err)
			}
			if _, err := savedrun.Load(dir); err == nil || !strings.Contains(err.Error(), "is not a regular file") {
				t.Errorf("Load = %v, want %s refused", err, name)
			}
		})
		t.Run(name+" is a FIFO", func(t *testing.T) {
			dir := saved(t)
			path := filepath.Join(dir, name)
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := mkfifo(path); err != nil {
				t.Skip(err)
			}
			done := make(chan error, 1)
			go func() { _, err := savedrun.Load(dir); done <- err }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "is not a regular file") {
					t.Errorf("Load = %v, want %s refused", err, name)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("Load blocked on a FIFO %s", name)
			}
		})
	}
	t.Run("an audit far larger than the run", func(t *testing.T) {
		dir := saved(t)
		big := `{"v":{"applied":{"1":1},"x":"` + strings.Repeat("a", 4<<20) + `"}}`
		if err := os.WriteFile(filepath.Join(dir, savedrun.AuditFile), []byte(big), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := savedrun.Load(dir); err == nil || !strings.Contains(err.Error(), "more than the run it belongs to can have written") {
			t.Errorf("Load = %v, want the audit refused as too large", err)
		}
	})
	t.Run("a call variant's audit has room for its calls", func(t *testing.T) {
		s := parse(t)
		s.Variants[0].Effect = catalog.CallWithKey
		d, err := savedrun.Create(t.TempDir(), "run", false)
		if err != nil {
			t.Fatal(err)
		}
		const n = 20_000 // three calls each: far more than 64 bytes an intent
		a := history.Audit{Applied: map[int]int{}}
		for i := 1; i <= n; i++ {
			a.Applied[i] = 1
			key := strconv.Itoa(i)
			a.Calls = append(a.Calls, history.Call{Intent: i, Key: key}, history.Call{Intent: i, Key: key, Replayed: true}, history.Call{Intent: i, Key: key, Replayed: true})
		}
		if err := d.Finish(s, check.Meta{Messages: n}, map[string]history.Audit{"none": a}, nil); err != nil {
			t.Fatal(err)
		}
		deliveries(t, d.Path, n, 3) // the audit is bounded by the history too
		r, err := savedrun.Load(d.Path)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(r.Audits["none"].Calls); got != 3*n {
			t.Errorf("loaded %d calls, want %d", got, 3*n)
		}
	})
	t.Run("a producer store's audit has room for its rows", func(t *testing.T) {
		s := parse(t)
		s.Variants[0].Producer = &scenario.Producer{Pattern: catalog.Outbox}
		d, err := savedrun.Create(t.TempDir(), "run", false)
		if err != nil {
			t.Fatal(err)
		}
		const n = 20_000 // a business row, an outbox row and a sent mark each: read back whole, not refused as too large
		a := history.Audit{Applied: map[int]int{}, Producer: &history.ProducerAudit{}}
		for i := 1; i <= n; i++ {
			a.Applied[i] = 1
			a.Producer.Rows = append(a.Producer.Rows, i)
			a.Producer.Outbox = append(a.Producer.Outbox, i)
			a.Producer.Sent = append(a.Producer.Sent, i)
		}
		if err := d.Finish(s, check.Meta{Messages: n}, map[string]history.Audit{"none": a}, nil); err != nil {
			t.Fatal(err)
		}
		deliveries(t, d.Path, n, 3) // the audit is bounded by the history too
		r, err := savedrun.Load(d.Path)
		if err != nil {
			t.Fatal(err)
		}
		if p := r.Audits["none"].Producer; p == nil || len(p.Rows) != n || len(p.Outbox) != n || len(p.Sent) != n {
			t.Errorf("loaded producer audit %v, want %d of each", p != nil, n)
		}
	})
	t.Run("impossible messages", func(t *testing.T) {
		dir := saved(t)
		if err := os.WriteFile(filepath.Join(dir, savedrun.MetaFile), []byte(`{"messages": 100000000000}`), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := savedrun.Load(dir); err == nil || !strings.Contains(err.Error(), "is outside 1..") {
			t.Errorf("Load = %v, want the meta refused", err)
		}
	})
}

// TestLoadRefusesLinksAndClaims: a scenario.yaml that links to a regular
// file elsewhere is refused (its lines would be echoed in errors), and an
// audit larger than its history can account for is refused although the
// scenario claims enough messages for it.
func TestLoadRefusesLinksAndClaims(t *testing.T) {
	d, err := savedrun.Create(t.TempDir(), "run", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Finish(parse(t), check.Meta{Messages: 10}, map[string]history.Audit{}, nil); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "secret.yaml")
	b, err := os.ReadFile(filepath.Join(d.Path, savedrun.ScenarioFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, b, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(d.Path, savedrun.ScenarioFile)
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, link); err != nil {
		t.Skip(err)
	}
	if _, err := savedrun.Load(d.Path); err == nil || !strings.Contains(err.Error(), "a symbolic link") {
		t.Errorf("Load = %v, want the linked scenario.yaml refused", err)
	}
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(link, b, 0o600); err != nil {
		t.Fatal(err)
	}
	// meta claims 10,000,000 messages; the history is empty, the audit 8 MiB.
	meta := `{"scenario": "s", "seed": 1, "messages": 10000000, "broker": "b"}`
	if err := os.WriteFile(filepath.Join(d.Path, savedrun.MetaFile), []byte(meta), 0o600); err != nil {
		t.Fatal(err)
	}
	audit := `{"v": {"applied": {"1": 1}}, "pad": "` + strings.Repeat("x", 8<<20) + `"}`
	if err := os.WriteFile(filepath.Join(d.Path, savedrun.AuditFile), []byte(audit), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := savedrun.Load(d.Path); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("Load = %v, want the audit refused for its size", err)
	}
}

// deliveries writes a history in which each of intents 1..n was delivered
// per times to variant none, as the audit of such a run can hold.
func deliveries(t *testing.T, dir string, n, per int) {
	t.Helper()
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `{"t":1,"variant":"none","type":"publish","intent":%d,"attempt":1}`+"\n", i)
		for a := 1; a <= per; a++ {
			fmt.Fprintf(&b, `{"t":2,"variant":"none","type":"deliver","intent":%d,"attempt":%d,"consumer":1,"pos":"0@%d"}`+"\n", i, a, i)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, savedrun.HistoryFile), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}
