package blackbox

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildHelper, when set, makes the test binary a dqbench stand-in that
// runs one Build and waits (TestBuildGoesWithDqbench kills it).
const buildHelper = "DQBENCH_TEST_BUILD_HELPER"

func TestBuildHelper(t *testing.T) {
	dir := os.Getenv(buildHelper)
	if dir == "" {
		t.Skip("a helper process for TestBuildGoesWithDqbench")
	}
	_ = Build(context.Background(), dir, "./p", filepath.Join(dir, "out"))
}

// A SIGKILLed dqbench leaves no part of a build behind: not the go
// command, nor what it started (here a -toolexec wrapper that sleeps,
// standing in for a long compile).
func TestBuildGoesWithDqbench(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Pdeathsig is Linux's")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command")
	}
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "p"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module slow\n\ngo 1.22\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "p", "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644))
	wrapper := filepath.Join(dir, "slow-tool.sh")
	must(os.WriteFile(wrapper, []byte("#!/bin/sh\nsleep 120\nexec \"$@\"\n"), 0o755))

	helper := exec.Command(os.Args[0], "-test.run=^TestBuildHelper$")
	helper.Env = append(os.Environ(), buildHelper+"="+dir, "GOFLAGS=-toolexec="+wrapper, "GOCACHE="+filepath.Join(dir, "cache"))
	must(helper.Start())
	defer helper.Process.Kill()

	// Wait for the wrapper: the build is under way, two levels down.
	var group int
	for deadline := time.Now().Add(60 * time.Second); group == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the build's tool wrapper never started")
		}
		group = groupOf(wrapper)
		time.Sleep(20 * time.Millisecond)
	}
	must(helper.Process.Kill())
	_ = helper.Wait()
	for deadline := time.Now().Add(20 * time.Second); ; {
		left := groupMembers(group)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, pid := range left {
				cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
				t.Errorf("process %d of the build is still there after dqbench was killed: %s", pid, strings.ReplaceAll(string(cmdline), "\x00", " "))
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// groupOf is the process group of a running process whose command line
// mentions s, or 0.
func groupOf(s string) int {
	files, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil || !strings.Contains(string(b), s) || strings.Contains(string(b), "-test.run") {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		if pg, err := syscall.Getpgid(pid); err == nil {
			return pg
		} else if errors.Is(err, syscall.ESRCH) {
			continue
		}
	}
	return 0
}
