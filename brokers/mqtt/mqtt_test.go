package mqtt_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/brokers/brokertest"
	"github.com/dqbench/dqbench/brokers/mqtt"
	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/netfault"

	"github.com/dqbench/dqbench/internal/testenv"
)

// toxiproxy v2.12.0 can leave a goroutine blocked per broken proxied
// connection (netfault.StuckInToxiproxy).
func TestMain(m *testing.M) {
	var opts []goleak.Option
	for _, fn := range netfault.StuckInToxiproxy {
		opts = append(opts, goleak.IgnoreTopFunction(fn))
	}
	goleak.VerifyTestMain(m, opts...)
}

func openMQTT(t *testing.T, cfg brokers.Config) brokers.Broker {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	b, err := mqtt.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("mqtt.Open(%+v): %v", cfg, err)
	}
	return b
}

func settings(qos, sub int, client catalog.MQTTClient) *catalog.MQTTSettings {
	s := &catalog.MQTTSettings{QoS: &qos, SubscriptionQoS: &sub, Client: client}
	s.Defaults()
	return s
}

func TestEmbedded(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    *catalog.MQTTSettings
	}{
		{"qos1", settings(1, 1, catalog.Paho)},
		{"qos2", settings(2, 2, catalog.Paho)},
		{"paho.golang-qos1", settings(1, 1, catalog.PahoGolang)},
		{"paho.golang-qos2", settings(2, 2, catalog.PahoGolang)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			brokertest.Run(t, func(t *testing.T) brokers.Broker {
				return openMQTT(t, brokers.Config{Kind: catalog.MQTT, Mode: catalog.Embedded, Settings: tc.s})
			})
		})
	}
}

// TestManaged runs the contract on managed Mosquittos (one per
// destination), skipped when mosquitto is not installed unless
// DQBENCH_REQUIRE_BROKERS=1.
func TestManaged(t *testing.T) {
	testenv.SkipShort(t, "Mosquitto")
	if _, err := exec.LookPath("mosquitto"); err != nil {
		if _, serr := os.Stat("/usr/sbin/mosquitto"); serr != nil {
			if os.Getenv("DQBENCH_REQUIRE_BROKERS") == "1" {
				t.Fatal("mode managed needs the mosquitto binary, which is not installed")
			}
			t.Skip("mode managed needs the mosquitto binary, which is not installed (apt-get install mosquitto)")
		}
	}
	brokertest.Run(t, func(t *testing.T) brokers.Broker {
		return openMQTT(t, brokers.Config{Kind: catalog.MQTT, Mode: catalog.Managed, Settings: settings(1, 1, catalog.Paho)})
	})
}

// envAddr names the Mosquitto the external tests use (default
// tcp://127.0.0.1:1883).
const envAddr = "DQBENCH_MQTT_ADDR"

// TestExternal runs the contract on a running Mosquitto, skipped when it
// does not answer unless DQBENCH_REQUIRE_BROKERS=1.
func TestExternal(t *testing.T) {
	addr := os.Getenv(envAddr)
	if addr == "" {
		addr = "tcp://127.0.0.1:1883"
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	b, err := mqtt.Open(ctx, brokers.Config{Kind: catalog.MQTT, Mode: catalog.External, Addresses: []string{addr}})
	cancel()
	if err != nil {
		if os.Getenv("DQBENCH_REQUIRE_BROKERS") == "1" {
			t.Fatalf("no MQTT broker at %s: %v", addr, err)
		}
		t.Skipf("no MQTT broker at %s (set %s, or start one: apt-get install mosquitto): %v", addr, envAddr, err)
	}
	b.Close()
	// Not paho.golang: on Mosquitto, which reuses a packet id as soon as it
	// is acked, its manual acks fail now and then with "packet not found"
	// (its acksTracker drops a PUBLISH whose id is still listed as acked
	// but not yet flushed). Embedded mochi-mqtt does not reuse ids so soon.
	for _, client := range []catalog.MQTTClient{catalog.Paho} {
		t.Run(string(client), func(t *testing.T) {
			brokertest.Run(t, func(t *testing.T) brokers.Broker {
				return openMQTT(t, brokers.Config{Kind: catalog.MQTT, Mode: catalog.External, Addresses: []string{addr}, Settings: settings(1, 1, client)})
			})
		})
	}
}

// TestExternalUnreachable: a closed port is ErrUnreachable, naming the
// address.
func TestExternalUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := "tcp://" + ln.Addr().String()
	ln.Close()
	_, err = mqtt.Open(t.Context(), brokers.Config{Kind: catalog.MQTT, Mode: catalog.External, Addresses: []string{addr}})
	if !errors.Is(err, brokers.ErrUnreachable) || !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Fatalf("Open on a closed port: %v, want ErrUnreachable naming %s", err, addr)
	}
}

// silentBroker listens on 127.0.0.1 and accepts every TCP connection. It
// answers the CONNECT of a client whose id starts with answer (if not
// empty) with a CONNACK, and never answers anything on the others: a
// broker that went silent, or a port that is not MQTT's.
func silentBroker(t *testing.T, answer string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				buf := make([]byte, 512)
				n, _ := c.Read(buf)
				if answer != "" && bytes.Contains(buf[:n], []byte(answer)) {
					c.Write([]byte{0x20, 0x02, 0x00, 0x00}) // CONNACK, accepted
				}
				io.Copy(io.Discard, c)
			})
		}
	})
	return "tcp://" + ln.Addr().String()
}

// checkSilent checks that err says the broker at addr accepted and never
// answered CONNECT, and that ctx (short) is what ended the wait.
func checkSilent(t *testing.T, ctx context.Context, err error, addr string) {
	t.Helper()
	if err == nil {
		t.Fatalf("connected to a broker that never answers CONNECT")
	}
	if ctx.Err() == nil {
		t.Errorf("the connect gave up before its context ended: %v", err)
	}
	if !errors.Is(err, brokers.ErrUnreachable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want ErrUnreachable wrapping the context's DeadlineExceeded", err)
	}
	if want := "at " + addr + " accepted the TCP connection but never answered CONNECT"; !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want it to say %q", err, want)
	}
}

// TestExternalSilent: a listener that accepts TCP connections and never
// answers CONNECT is not a broker that answers; Open ends with the run's
// context (shorter than the connect timeout here) and says so.
func TestExternalSilent(t *testing.T) {
	addr := silentBroker(t, "")
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	b, err := mqtt.Open(ctx, brokers.Config{Kind: catalog.MQTT, Mode: catalog.External, Addresses: []string{addr}})
	if err == nil {
		b.Close()
	}
	checkSilent(t, ctx, err, addr)
}

// TestExternalFallsSilent: a broker that answered the probe when the run
// opened and then accepts and never answers: every connect of both client
// libraries (the persistent session's subscribe, a consumer, the cleanup
// of its sessions) ends with its context.
func TestExternalFallsSilent(t *testing.T) {
	for _, client := range []catalog.MQTTClient{catalog.Paho, catalog.PahoGolang} {
		for _, clean := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/clean=%v", client, clean), func(t *testing.T) {
				addr := silentBroker(t, "dqb-probe-")
				b := openMQTT(t, brokers.Config{Kind: catalog.MQTT, Mode: catalog.External, Addresses: []string{addr}})
				defer b.Close()
				s := settings(1, 1, client)
				s.CleanSession = &clean
				ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
				defer cancel()
				d, err := b.Open(ctx, brokers.DestinationSpec{Name: "silent", Settings: s})
				if !clean {
					// Open creates the persistent session first.
					if err == nil {
						d.Close(t.Context())
					}
					checkSilent(t, ctx, err, addr)
					return
				}
				if err != nil {
					t.Fatalf("Open with a clean session (no connect): %v", err)
				}
				_, err = d.Consumer(ctx, 1)
				checkSilent(t, ctx, err, addr)
				// Closing an external destination ends its sessions on the
				// broker: it does not wait on the silent broker again.
				cctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				if err := d.Close(cctx); !errors.Is(err, brokers.ErrCleanup) || cctx.Err() != nil {
					t.Errorf("Close = %v, want ErrCleanup saying the sessions may remain, without waiting on the broker", err)
				}
			})
		}
	}
}
