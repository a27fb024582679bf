package blackbox

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
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
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = dir
	// In a process group of its own, so that Ctrl-C or the deadline stops
	// the compiler and linker the go command started, too; and killed if
	// dqbench dies (Linux), as the consumers are.
	cmd.SysProcAttr = sysProcAttr()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w: build %s (go build -o %s %s, in %s): %v\n%s", ErrConsumer, pkg, out, pkg, dir, err, strings.TrimSpace(buf.String()))
	}
	return nil
}
