package leftover

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The child: notes a directory and a queue, says so, and waits to be killed.
func TestMain(m *testing.M) {
	if dir := os.Getenv("LEFTOVER_CHILD_DIR"); dir != "" {
		Note(Entry{Kind: Dir, Name: dir})
		Note(Entry{Kind: Queue, Where: "amqp://guest:secret@127.0.0.1:5672/", Name: "dqbench-q"})
		Note(Entry{Kind: Queue, Where: "amqp://guest:secret@127.0.0.1:5672/", Name: "dqbench-gone"})
		Forget(Entry{Kind: Queue, Where: "amqp://guest:secret@127.0.0.1:5672/", Name: "dqbench-gone"})
		os.Stdout.WriteString("ready\n")
		select {}
	}
	os.Exit(m.Run())
}

// A dqbench killed with SIGKILL leaves a directory and a queue; the sweep
// finds them through its ledger, removes both, and deletes the ledger. A
// live process's ledger is left alone.
func TestSweepAfterKill(t *testing.T) {
	t.Setenv("DQBENCH_LEDGER_DIR", t.TempDir())
	left := filepath.Join(t.TempDir(), "dqbench-stores-x")
	if err := os.Mkdir(left, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(left, Marker), nil, 0o600); err != nil { // as MkdirTemp makes it
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LEFTOVER_CHILD_DIR="+left)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	if _, err := out.Read(buf); err != nil || string(buf) != "ready\n" {
		t.Fatalf("child: %q %v", buf, err)
	}

	// Alive: nothing is an orphan yet.
	Note(Entry{Kind: Dir, Name: filepath.Join(t.TempDir(), "mine")})
	if o, _ := Orphans(); len(o) != 0 {
		t.Fatalf("orphans of live processes: %v", o)
	}

	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	orphans, _ := Orphans()
	if len(orphans) != 2 || orphans[0].Kind != Dir || orphans[1].Name != "dqbench-q" {
		t.Fatalf("orphans = %v, want the directory and the queue still noted", orphans)
	}
	if s := orphans[1].String(); strings.Contains(s, "secret") {
		t.Errorf("entry prints its password: %s", s)
	}
	var queues []string
	removed, failed, err := Sweep(context.Background(), map[Kind]Remover{
		Queue: func(_ context.Context, e Entry) error { queues = append(queues, e.Name+" "+e.Where); return nil },
	})
	if len(removed) != 2 || len(failed) != 0 || err != nil {
		t.Fatalf("removed %v, failed %v, %v", removed, failed, err)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("the directory is still there: %v", err)
	}
	if len(queues) != 1 || queues[0] != "dqbench-q amqp://guest:secret@127.0.0.1:5672/" {
		t.Errorf("queue remover got %v", queues)
	}
	if o, _ := Orphans(); len(o) != 0 {
		t.Errorf("after the sweep: %v", o)
	}
	files, _ := filepath.Glob(filepath.Join(LedgerDir(), "*.jsonl"))
	if len(files) != 1 { // this process's own
		t.Errorf("ledgers left: %v", files)
	}
}

func TestCloseRemovesAnEmptyLedger(t *testing.T) {
	t.Setenv("DQBENCH_LEDGER_DIR", t.TempDir())
	mu.Lock()
	file, live = nil, map[Entry]bool{}
	mu.Unlock()
	e := Entry{Kind: Schema, Where: "postgres://u@h/db", Name: "dqbench_x"}
	Note(e)
	Forget(e)
	Close()
	if files, _ := filepath.Glob(filepath.Join(LedgerDir(), "*")); len(files) != 0 {
		t.Errorf("ledger kept with nothing in it: %v", files)
	}
}
