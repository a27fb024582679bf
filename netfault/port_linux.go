package netfault

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// listen listens on address with SO_REUSEPORT, which lets the relay's
// port be held by a socket that does not listen (holdPort) and listened
// on again after its listener was closed.
func listen(address string) (net.Listener, error) {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) { serr = reusePort(int(fd)) }); err != nil {
			return err
		}
		return serr
	}}
	return lc.Listen(context.Background(), "tcp", address)
}

func reusePort(fd int) error {
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		return err
	}
	return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
}

// holdPort binds a socket that never listens to addr's port: while the
// relay's listener is closed, a dial to the port is refused (no listener)
// and no outgoing connection is given the port (a bound one), so the
// relay can listen on it again.
func holdPort(addr net.Addr) (io.Closer, error) {
	ta, ok := addr.(*net.TCPAddr)
	ip := ta.IP.To4()
	if !ok || ip == nil {
		return nil, fmt.Errorf("hold port of %v: not an IPv4 TCP address", addr)
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("hold port %d: %w", ta.Port, err)
	}
	sa := &syscall.SockaddrInet4{Port: ta.Port}
	copy(sa.Addr[:], ip)
	if err := reusePort(fd); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("hold port %d: %w", ta.Port, err)
	}
	if err := syscall.Bind(fd, sa); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("hold port %d: %w", ta.Port, err)
	}
	return os.NewFile(uintptr(fd), "relay-port-hold"), nil
}
