//go:build unix

package leftover

import (
	"os"
	"os/exec"
	"syscall"
	"time"
)

// UndertakerArg is the hidden command a dqbench runs as its undertaker.
const UndertakerArg = "__undertaker"

// ledgerEnv tells the undertaker whose ledger it watches.
const ledgerEnv = "DQBENCH_UNDERTAKER_LEDGER"

// StartUndertaker starts this program again (self, named argv0) as the
// undertaker of this process: a child in its own process group (a Ctrl-C
// at the terminal does not reach it) that waits, reading its standard
// input, until this process has exited, however it ended: the pipe's
// other end closes only then, SIGKILL included. If this process's ledger
// still lists anything then (a killed run's directories, queues, streams,
// schemas, clusters), the undertaker removes it at once, as "dqbench
// clean" would; it looks only once this process no longer runs, so it
// never races this process's own cleanup. stop is for a process that has
// cleaned up after itself: it tells the undertaker so (one byte on the
// pipe) and waits, briefly, for it to go, so that nothing is left running
// after a run.
func StartUndertaker(self, argv0 string) (stop func(), err error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := &exec.Cmd{
		Path:        self,
		Args:        []string{argv0, UndertakerArg},
		Env:         append(os.Environ(), ledgerEnv+"="+Path()),
		Stdin:       r,
		Stderr:      os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, err
	}
	r.Close() // the child's end; w is never written, and closes with this process
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	return func() {
		_, _ = w.Write([]byte{'.'})
		w.Close()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
		}
	}, nil
}

// Undertake is the undertaker's work (see StartUndertaker): it waits for
// standard input to end, then for the watched process to be gone, and
// returns its ledger's path when there is one to sweep: "" when the
// process said it cleaned up (a byte on the pipe), left no ledger, or
// this is not an undertaker.
func Undertake() string {
	path := os.Getenv(ledgerEnv)
	if path == "" {
		return ""
	}
	buf := make([]byte, 1)
	if n, _ := os.Stdin.Read(buf); n > 0 {
		return "" // the process ended normally, its cleanup done
	}
	// EOF with nothing said: the process is gone, killed.
	for deadline := time.Now().Add(5 * time.Second); Alive(path) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := os.Stat(path); err != nil {
		return ""
	}
	return path
}
