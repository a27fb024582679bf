package blackbox

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"strings"
	"syscall"
)

// Build builds the Go package pkg (relative to dir) into the program out,
// with the go command on PATH: what process.build asks for, once per run,
// so that restarting a killed instance costs a process start, not a build.
func Build(ctx context.Context, dir, pkg, out string) error {
	if !strings.HasPrefix(pkg, "./") && pkg != "." {
		// Validation refuses it; never let a flag ("-toolexec=...") through.
		return fmt.Errorf("%w: build %q: not a ./relative package directory", ErrConsumer, pkg)
	}
	// In a process group of its own, so that Ctrl-C or the deadline stops
	// the compiler and linker the go command started, too; and, on Linux,
	// the whole group killed if dqbench dies (goCommand).
	cmd := goCommand(ctx, "build", "-o", out, pkg)
	cmd.Dir = dir
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	// The kernel sends the parent-death signal when the thread that
	// started the child ends, not only the process: keep this one until
	// the build is over.
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		errc <- cmd.Run()
	}()
	if err := <-errc; err != nil {
		return fmt.Errorf("%w: build %s (go build -o %s %s, in %s): %v\n%s", ErrConsumer, pkg, out, pkg, dir, err, strings.TrimSpace(buf.String()))
	}
	return nil
}
