package blackbox

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Which process a connection to the broker comes from is read from /proc:
// the client end's socket inode (from /proc/net/tcp, by its port and the
// broker's), then which process of an instance's process group holds a
// file descriptor on that socket.

// socketInode returns the inode of the client end of the TCP connection
// from client to server, or 0.
func socketInode(client, server *net.TCPAddr) uint64 {
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if ino := findInode(f, client.Port, server.Port); ino != 0 {
			return ino
		}
	}
	return 0
}

func findInode(file string, localPort, remotePort int) uint64 {
	f, err := os.Open(file)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || port(fields[1]) != localPort || port(fields[2]) != remotePort {
			continue
		}
		ino, _ := strconv.ParseUint(fields[9], 10, 64)
		return ino
	}
	return 0
}

// port reads the port of a /proc/net/tcp address ("0100007F:1F90").
func port(addr string) int {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return -1
	}
	p, err := strconv.ParseUint(addr[i+1:], 16, 16)
	if err != nil {
		return -1
	}
	return int(p)
}

// groupMembers lists the processes in process group pgid.
func groupMembers(pgid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pg, err := syscall.Getpgid(pid); err == nil && pg == pgid {
			out = append(out, pid)
		}
	}
	return out
}

// holdsSocket reports whether process pid has a descriptor on the socket
// with inode ino.
func holdsSocket(pid int, ino uint64) bool {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	want := fmt.Sprintf("socket:[%d]", ino)
	for _, e := range entries {
		if link, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && link == want {
			return true
		}
	}
	return false
}

// sysProcAttr puts an instance in a process group of its own (so a kill
// reaches its children, and Ctrl-C at the terminal does not: dqbench stops
// it) and kills it if dqbench itself dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// goCommand runs the go command with args in a process group of its own
// that goes with dqbench: Pdeathsig reaches only a direct child, and the
// go command's own children (compile, link, a -toolexec wrapper) would
// outlive it, so the child is a shell that, told dqbench died (SIGTERM),
// kills its whole group; otherwise it exits with the go command's status.
func goCommand(ctx context.Context, args ...string) *exec.Cmd {
	const script = `trap 'kill -KILL 0' TERM; "$@" & wait $!`
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", script, "sh", "go"}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	return cmd
}

// canAttribute reports whether this system lets dqbench tell which process
// a connection comes from.
const canAttribute = true
