//go:build !linux

package netfault

import (
	"io"
	"net"
)

// listen listens on address; elsewhere than Linux the port is not held
// while the upstream is down, and a relay listens on it again when it is
// still free.
func listen(address string) (net.Listener, error) { return net.Listen("tcp", address) }

type noHold struct{}

func (noHold) Close() error { return nil }

func holdPort(net.Addr) (io.Closer, error) { return noHold{}, nil }
