package cmd

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dqbench/dqbench/leftover"
)

// TestMain keeps the tests' ledger entries out of the user's ledger, which
// the next dqbench run sweeps, and theirs out of the tests'.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cmdtest-ledger-")
	if err != nil {
		panic(err)
	}
	os.Setenv("DQBENCH_LEDGER_DIR", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestSweepBeforeRunIsOneLine: what a killed run left on a server that no
// longer answers cannot be removed; a run says so in one line of at most
// 80 columns, pointing at dqbench clean, which says which and why, and
// the next runs say nothing more of it; --quiet says nothing; clean
// --forget drops it.
func TestSweepBeforeRunIsOneLine(t *testing.T) {
	t.Setenv("DQBENCH_LEDGER_DIR", t.TempDir())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := "redis://" + ln.Addr().String()
	ln.Close() // nothing answers there now
	ledger := `{"op":"+","kind":"keys","where":"` + gone + `","name":"dqbench:killed-run-0:"}` + "\n"
	// pid 1 runs, but did not start at this time: a dead writer's ledger.
	if err := os.WriteFile(filepath.Join(os.Getenv("DQBENCH_LEDGER_DIR"), "1-0.jsonl"), []byte(ledger), 0o600); err != nil {
		t.Fatal(err)
	}
	cli, _ := scenarioFiles(t)
	const want = "1 leftovers of killed runs could not be removed: see dqbench clean\n"
	if q := run(t, nil, "run", cli, "--quiet"); q.err != "" {
		t.Errorf("--quiet printed %q", q.err)
	}
	r := run(t, nil, "run", cli)
	if !strings.Contains(r.err, want) || strings.Contains(r.err, "connection refused") || len(want) > 80 {
		t.Errorf("run's stderr:\n%s\nwant the one line %q (at most 80 columns) and no detail", r.err, want)
	}
	if again := run(t, nil, "run", cli); strings.Contains(again.err, "leftovers") {
		t.Errorf("the next run told again of the same leftovers:\n%s", again.err)
	}
	c := run(t, nil, "clean")
	if c.code != ExitIncomplete || !strings.Contains(c.out, "could not remove keys dqbench:killed-run-0: on "+gone) || !strings.Contains(c.out, "connection refused") {
		t.Errorf("clean: exit %d\n%s", c.code, c.out)
	}
	f := run(t, nil, "clean", "--forget")
	if f.code != 0 || !strings.Contains(f.out, "forgot keys dqbench:killed-run-0: on "+gone) {
		t.Errorf("clean --forget: exit %d\n%s", f.code, f.out)
	}
	if c := run(t, nil, "clean"); c.code != 0 || strings.Contains(c.out, "could not") {
		t.Errorf("clean after --forget: exit %d\n%s", c.code, c.out)
	}
}

// TestCleanRefusesWhatAnotherUserPlanted: a ledger directory writable by
// others (as another local user would make it, to be swept first) and a
// killed-looking RabbitMQ cluster whose state names another directory:
// clean and run say so and remove nothing, not even a directory dqbench
// marked.
func TestCleanRefusesWhatAnotherUserPlanted(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	ledger := filepath.Join(tmp, "dqbench-ledger-0")
	t.Setenv("DQBENCH_LEDGER_DIR", ledger)
	if err := os.Mkdir(ledger, 0o700); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(t.TempDir(), "precious")
	if err := os.Mkdir(victim, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(victim, leftover.Marker), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	line := `{"op":"+","kind":"dir","name":"` + victim + `"}` + "\n" +
		`{"op":"+","kind":"queue","where":"amqp://guest:guest@127.0.0.1:1/","name":"orders"}` + "\n"
	if err := os.WriteFile(filepath.Join(ledger, "1-0.jsonl"), []byte(line), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(ledger, 0o777); err != nil {
		t.Fatal(err)
	}
	cluster := filepath.Join(tmp, "dqbench-rabbitmq-planted")
	if err := os.Mkdir(cluster, 0o700); err != nil {
		t.Fatal(err)
	}
	state := `{"dir": "` + victim + `", "owner": 1073741824}`
	if err := os.WriteFile(filepath.Join(cluster, "state.json"), []byte(state), 0o600); err != nil {
		t.Fatal(err)
	}

	c := run(t, nil, "clean")
	for _, want := range []string{
		"the cleanup ledger: dqbench will not use " + ledger + ": it is writable by group or others (mode 0777); nothing it lists was removed",
		"left alone: dqbench will not use " + filepath.Join(cluster, "state.json") + ": it names the directory " + victim + ", not its own",
	} {
		if !strings.Contains(c.out, want) {
			t.Errorf("clean does not say %q:\n%s", want, c.out)
		}
	}
	if c.code != ExitIncomplete || strings.Contains(c.out, "removed dir") || strings.Contains(c.out, "stopped the managed") {
		t.Errorf("clean: exit %d\n%s", c.code, c.out)
	}
	cli, _ := scenarioFiles(t)
	r := run(t, nil, "run", cli)
	if !strings.Contains(r.err, "dqbench will not use "+ledger) {
		t.Errorf("run does not say the ledger is refused:\n%s", r.err)
	}
	for _, p := range []string{victim, cluster, filepath.Join(ledger, "1-0.jsonl")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
