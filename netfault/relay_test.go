package netfault

import (
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

// echo serves connections that send back what they read.
func echo(t *testing.T) string {
	return serve(t, func(c net.Conn) {
		go func() { _, _ = io.Copy(c, c); c.Close() }()
	})
}

// relayTo starts a relay without filters in front of upstream.
func relayTo(t *testing.T, upstream string) *Relay {
	r, err := NewRelay(upstream, func(net.Addr) (Filter, Filter, func()) { return nil, nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// roundTrip sends s on c and reads it back.
func roundTrip(t *testing.T, c net.Conn, s string) {
	t.Helper()
	if _, err := c.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(s))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != s {
		t.Fatalf("echo of %q: %q, %v", s, got, err)
	}
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestRelayBlackhole: what is sent into a blackhole never arrives, the
// connection closes when it ends, and a new one passes again.
func TestRelayBlackhole(t *testing.T) {
	r := relayTo(t, echo(t))
	c := dial(t, r.Addr)
	roundTrip(t, c, "before")
	r.Blackhole(200 * time.Millisecond)
	if _, err := c.Write([]byte("into the dark")); err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(c); len(got) > 0 {
		t.Errorf("read %q through a blackhole (%v)", got, err)
	}
	roundTrip(t, dial(t, r.Addr), "after")
}

// TestRelayReset: every connection is reset; new ones pass.
func TestRelayReset(t *testing.T) {
	r := relayTo(t, echo(t))
	c := dial(t, r.Addr)
	roundTrip(t, c, "before")
	r.Reset()
	if got, err := io.ReadAll(c); len(got) > 0 || err == nil {
		t.Errorf("a reset connection read %q, %v: want nothing and a reset", got, err)
	}
	roundTrip(t, dial(t, r.Addr), "after")
}

// TestRelaySlow: while slow, a round trip takes at least the latency
// both ways; the data arrives whole.
func TestRelaySlow(t *testing.T) {
	r := relayTo(t, echo(t))
	c := dial(t, r.Addr)
	r.Slow(50*time.Millisecond, time.Minute)
	began := time.Now()
	roundTrip(t, c, "slow")
	if took := time.Since(began); took < 100*time.Millisecond {
		t.Errorf("a round trip through a slow relay took %v: want the latency both ways, 100ms at least", took)
	}
}

// TestRelayDeadUpstreamRefuses: with nothing at the upstream, the dial a
// relay took is reset (not closed cleanly as by a server that read
// nothing, which kgo takes for a missing TLS or SASL and gives up on),
// and the dials after it are refused, as dials to the dead server are
// (kgo forgets a dead coordinator on a failed dial only). Once the
// upstream is back, the relay takes dials and relays them again.
func TestRelayDeadUpstreamRefuses(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	r := relayTo(t, dead)
	refused := false
	for range 200 {
		c, err := net.Dial("tcp", r.Addr)
		if errors.Is(err, syscall.ECONNRESET) {
			continue // a dial the listener had queued when it closed
		}
		if err != nil {
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Fatalf("dial: %v, want refused", err)
			}
			refused = true
			break
		}
		// Nothing written first: closed before the client's first
		// request arrived, the connection read as a clean EOF.
		got, err := io.ReadAll(c)
		c.Close()
		if len(got) > 0 || err == nil {
			t.Fatalf("read %q, %v: want nothing and a reset", got, err)
		}
	}
	if !refused {
		t.Fatal("200 dials to a relay whose upstream is down were all taken: want them refused after the first")
	}
	// The upstream comes back, on its address.
	ln, err = net.Listen("tcp", dead)
	if err != nil {
		t.Skipf("the upstream's port was taken meanwhile: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		c, err := net.Dial("tcp", r.Addr)
		if err == nil {
			roundTrip(t, c, "back")
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("10s after the upstream came back, a dial to the relay: %v", err)
		}
	}
}
