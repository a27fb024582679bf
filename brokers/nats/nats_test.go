package nats_test

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/brokers/brokertest"
	"github.com/dqbench/dqbench/brokers/nats"
	"github.com/dqbench/dqbench/brokers/nats/cluster"
	"github.com/dqbench/dqbench/catalog"

	"github.com/dqbench/dqbench/internal/testenv"
)

// envURL names the NATS to run the contract against in mode external
// (default the local one, nats://127.0.0.1:4222).
const envURL = "DQBENCH_NATS_URL"

func externalURL() string {
	if v := os.Getenv(envURL); v != "" {
		return v
	}
	return "nats://127.0.0.1:4222"
}

// settings gives the contract a short ack_wait: a consumer that dies
// leaves its unacked messages to the server, which delivers them again
// only after ack_wait.
func settings() *catalog.NATSSettings {
	s := &catalog.NATSSettings{AckWait: catalog.Duration(time.Second)}
	s.Defaults()
	return s
}

func open(mode catalog.Mode, addrs ...string) func(t *testing.T) brokers.Broker {
	return func(t *testing.T) brokers.Broker {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		b, err := nats.Open(ctx, brokers.Config{Kind: catalog.NATS, Mode: mode, Addresses: addrs, Settings: settings()})
		if err != nil {
			t.Fatalf("nats.Open: %v", err)
		}
		return b
	}
}

func TestEmbedded(t *testing.T) {
	brokertest.Run(t, open(catalog.Embedded))
}

// TestExternal runs the contract against the local nats-server (Debian's
// 2.9.10 here); every stream it creates has a unique name and is deleted.
func TestExternal(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	b, err := nats.Open(ctx, brokers.Config{Kind: catalog.NATS, Mode: catalog.External, Addresses: []string{externalURL()}, Settings: settings()})
	cancel()
	if err != nil {
		if os.Getenv("DQBENCH_REQUIRE_BROKERS") == "1" {
			t.Fatalf("DQBENCH_REQUIRE_BROKERS=1 but: %v", err)
		}
		t.Skipf("no NATS with JetStream to test against (%v); set %s or start one (nats-server -js)", err, envURL)
	}
	b.Close()
	brokertest.Run(t, open(catalog.External, externalURL()))
}

// TestUnreachable: a closed port is ErrUnreachable within 2 s, naming the
// address with its password masked and saying how to start a server.
func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	for _, url := range []string{"nats://" + addr, "nats://u:s3cret-pw@" + addr} {
		start := time.Now()
		_, err = nats.Open(t.Context(), brokers.Config{Kind: catalog.NATS, Mode: catalog.External, Addresses: []string{url}})
		if !errors.Is(err, brokers.ErrUnreachable) {
			t.Fatalf("Open(%s) on a closed port: %v, want ErrUnreachable", url, err)
		}
		msg := err.Error()
		for _, want := range []string{catalog.MaskURL(url), "nats-server -js", "mode: embedded"} {
			if !strings.Contains(msg, want) {
				t.Errorf("error %q does not say %q", msg, want)
			}
		}
		if strings.Contains(msg, "s3cret-pw") {
			t.Errorf("error %q shows the password", msg)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("Open took %s to fail, want under 2s", d)
		}
	}
}

// TestSilentPeer: a port that accepts and never answers fails within 2 s.
func TestSilentPeer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	start := time.Now()
	_, err = nats.Open(t.Context(), brokers.Config{Kind: catalog.NATS, Mode: catalog.External, Addresses: []string{"nats://" + l.Addr().String()}})
	if !errors.Is(err, brokers.ErrUnreachable) {
		t.Fatalf("Open on a silent peer: %v, want ErrUnreachable", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "nothing answered the NATS handshake") || strings.Contains(msg, "start one") {
		t.Errorf("error %q, want it to say the port accepted and never answered, not \"start one\"", msg)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Open took %s to fail, want under 2s", d)
	}
}

// TestNoJetStream: a NATS server without JetStream gets its own message,
// which says how to enable it and not "start one".
func TestNoJetStream(t *testing.T) {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("server did not start")
	}
	_, err = nats.Open(t.Context(), brokers.Config{Kind: catalog.NATS, Mode: catalog.External, Addresses: []string{srv.ClientURL()}})
	if err == nil {
		t.Fatal("Open on a server without JetStream succeeded")
	}
	msg := err.Error()
	for _, want := range []string{"JetStream is not enabled", "-js", srv.ClientURL()} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "start one") {
		t.Errorf("error %q says start one, but a server answered", msg)
	}
}

// TestDeleteStream: what dqbench clean does with a stream a killed run
// left on an external server; a stream already gone is not an error.
func TestDeleteStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	b, err := nats.Open(ctx, brokers.Config{Kind: catalog.NATS, Mode: catalog.External, Addresses: []string{externalURL()}, Settings: settings()})
	if err != nil {
		if os.Getenv("DQBENCH_REQUIRE_BROKERS") == "1" {
			t.Fatalf("DQBENCH_REQUIRE_BROKERS=1 but: %v", err)
		}
		t.Skipf("no NATS with JetStream to test against (%v)", err)
	}
	defer b.Close()
	spec := brokertest.Spec(t, true)
	d, err := b.Open(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	stream := "dqbench-" + spec.Name
	for range 2 {
		if err := nats.DeleteStream(ctx, externalURL(), stream); err != nil {
			t.Fatalf("DeleteStream(%s): %v", stream, err)
		}
	}
	if _, err := d.Backlog(ctx); err == nil {
		t.Errorf("stream %s still answers after DeleteStream", stream)
	}
	if err := d.Close(ctx); err != nil {
		t.Errorf("Close after the stream was deleted: %v", err)
	}
}

// TestRefusedLogin: a server that answers and refuses the URL's user and
// password says so, masks the password and does not say "start one".
func TestRefusedLogin(t *testing.T) {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true, Username: "dq", Password: "right"})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("server did not start")
	}
	url := strings.Replace(srv.ClientURL(), "nats://", "nats://dq:wrong-pw@", 1)
	_, err = nats.Open(t.Context(), brokers.Config{Kind: catalog.NATS, Mode: catalog.External, Addresses: []string{url}})
	if err == nil {
		t.Fatal("Open with a wrong password succeeded")
	}
	msg := err.Error()
	if !strings.Contains(msg, "refused the login") || strings.Contains(msg, "wrong-pw") || strings.Contains(msg, "start one") {
		t.Errorf("error %q, want it to say the login was refused, mask the password and not say \"start one\"", msg)
	}
}

// TestManaged runs the contract on a managed 3-node JetStream cluster
// with replicated streams: one cluster for every subtest, started as
// "dqbench brokers up nats" does in a state directory of its own (about a
// second), stopped at the end. Skipped when nats-server is not installed,
// unless DQBENCH_REQUIRE_BROKERS=1.
func TestManaged(t *testing.T) {
	testenv.SkipShort(t, "a managed NATS cluster")
	if !cluster.Installed() {
		if os.Getenv("DQBENCH_REQUIRE_BROKERS") == "1" {
			t.Fatal("DQBENCH_REQUIRE_BROKERS=1 but nats-server is not installed (mode: managed needs it)")
		}
		t.Skip("nats-server is not installed: mode: managed cannot start a cluster")
	}
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	cl, _, err := nats.Up(ctx, func() {})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := nats.Down(); err != nil {
			t.Error(err)
		}
		if cluster.Running(cl) {
			t.Error("a node still runs after Down")
		}
	}()
	brokertest.Run(t, func(t *testing.T) brokers.Broker {
		t.Helper()
		s := settings()
		s.Replicas = 3
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		b, err := nats.Open(ctx, brokers.Config{Kind: catalog.NATS, Mode: catalog.Managed, Settings: s})
		if err != nil {
			t.Fatalf("nats.Open: %v", err)
		}
		if !strings.Contains(b.Name(), "started by dqbench brokers up") {
			t.Errorf("Open did not reuse the cluster: %s", b.Name())
		}
		return b
	})
}
