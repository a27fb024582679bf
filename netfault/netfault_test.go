package netfault

import (
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// serve accepts connections on a loopback port until the test ends and
// hands each to handle, one at a time unless handle starts its own
// goroutine.
func serve(t *testing.T, handle func(net.Conn)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			handle(c)
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}

// sink serves one connection at a time and reports on got everything it
// read from a connection once the connection ended.
func sink(t *testing.T) (addr string, got chan string) {
	got = make(chan string, 10)
	return serve(t, func(c net.Conn) {
		b, _ := io.ReadAll(c)
		c.Close()
		got <- string(b)
	}), got
}

// dropAfter forwards bytes until it sees stop, then cuts the connection.
type dropAfter struct{ stop byte }

func (d dropAfter) Filter(b []byte) ([]byte, bool) {
	if i := bytes.IndexByte(b, d.stop); i >= 0 {
		return b[:i], true
	}
	return b, false
}

// TestFilterToxic: an in-process toxiproxy runs a registered filter on a
// real connection: bytes before the stop byte reach the server, the
// connection is then cut, and nothing is left running after Close.
func TestFilterToxic(t *testing.T) {
	upstream, got := sink(t)
	l, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	p, err := l.Proxy("test", upstream)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AddFilter("cut-at-x", Upstream, func() Filter { return dropAfter{'x'} }); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, w := range []string{"hello ", "abxcd", "more"} {
		if _, err := c.Write([]byte(w)); err != nil {
			break // the proxy may have closed it already
		}
	}
	select {
	case s := <-got:
		if s != "hello ab" {
			t.Errorf("the server read %q, want \"hello ab\" (nothing from the stop byte on)", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the server's connection was not closed")
	}
	if n, err := c.Read(make([]byte, 1)); err == nil {
		t.Errorf("the client's connection is still open (read %d bytes)", n)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestExternalHasNoFilters(t *testing.T) {
	l := &Layer{endpoint: "toxiproxy at http://example"}
	p := &Proxy{l: l}
	if err := p.AddFilter("x", Upstream, nil); err == nil {
		t.Fatal("an external toxiproxy accepted a protocol-aware toxic")
	}
}

// TestExternal drives a toxiproxy through its HTTP API only (Connect), as
// with --toxiproxy, here the in-process server's: a proxy passes bytes,
// and toxiproxy's own reset_peer toxic breaks its connections.
func TestExternal(t *testing.T) {
	upstream, got := sink(t)
	server, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	l, err := Connect(server.URL())
	if err != nil {
		t.Fatal(err)
	}
	if l.Embedded() {
		t.Fatal("a connected toxiproxy says it runs in this process")
	}
	p, err := l.Proxy("ext", upstream)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("through")); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if s := <-got; s != "through" {
		t.Errorf("the server read %q through the proxy", s)
	}
	if err := p.Add(Toxic{Name: "reset", Type: "reset_peer", Stream: Upstream, Attributes: map[string]any{"timeout": 0}}); err != nil {
		t.Fatal(err)
	}
	c, err = net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = c.Write([]byte("x"))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("reset_peer left the connection open")
	}
	<-got
}

func TestConnectUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = Connect("http://" + addr)
	if err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "docker compose up -d toxiproxy") {
		t.Errorf("Connect to a closed port: %v", err)
	}
}
