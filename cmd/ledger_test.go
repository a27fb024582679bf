package cmd

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
// longer answers cannot be removed; each run says so in one line, pointing
// at dqbench clean, which says which and why; --quiet says nothing.
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
	r := run(t, nil, "run", cli)
	if want := "1 resources left by killed dqbench runs could not be removed; \"dqbench clean\" says which and why\n"; !strings.Contains(r.err, want) || strings.Contains(r.err, "connection refused") {
		t.Errorf("run's stderr:\n%s\nwant the one line %q and no detail", r.err, want)
	}
	if q := run(t, nil, "run", cli, "--quiet"); q.err != "" {
		t.Errorf("--quiet printed %q", q.err)
	}
	c := run(t, nil, "clean")
	if c.code != ExitIncomplete || !strings.Contains(c.out, "could not remove keys dqbench:killed-run-0: on "+gone) || !strings.Contains(c.out, "connection refused") {
		t.Errorf("clean: exit %d\n%s", c.code, c.out)
	}
}
