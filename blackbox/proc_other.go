//go:build !linux

package blackbox

import (
	"context"
	"net"
	"os/exec"
	"syscall"
)

// Telling which process a connection comes from needs Linux's /proc.

func socketInode(client, server *net.TCPAddr) uint64 { return 0 }
func groupMembers(pgid int) []int                    { return nil }
func holdsSocket(pid int, ino uint64) bool           { return false }

func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

const canAttribute = false

// goCommand runs the go command with args in a process group of its own.
func goCommand(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.SysProcAttr = sysProcAttr()
	return cmd
}
