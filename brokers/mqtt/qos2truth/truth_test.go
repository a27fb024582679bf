package qos2truth

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	pahov5 "github.com/eclipse/paho.golang/paho"
	pahomqtt "github.com/eclipse/paho.mqtt.golang"
	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"
)

var table = flag.Bool("qos2.table", false, "print the result table (make qos2-evidence)")

const (
	pubID = "truth-p"
	subID = "truth-s"
	// messages are published one at a time; faulted are those whose
	// chosen packet is lost (once each).
	messages = 7
)

var faulted = map[int]bool{2: true, 4: true, 6: true}

// bounds are the duplicates per lost packet, at least and at most.
// paho.mqtt.golang keeps no record of the QoS 2 packet ids it received: it
// delivers a re-sent PUBLISH again before PUBREL, against MQTT-4.3.3-2
// (subscriber PUBREC). It keeps no PUBREL either, and re-sends the stored
// PUBLISH on reconnect after it sent PUBREL, against MQTT-4.3.3-1: always
// when the broker had completed the exchange (publisher PUBCOMP), and
// sometimes when the broker still held it (publisher PUBREC, PUBREL):
// mochi re-sends its PUBREC as the session resumes, paho answers with
// PUBREL before its re-sent PUBLISH goes out, the broker completes the
// exchange and takes the PUBLISH that follows as new. paho.golang keeps
// both records (0 everywhere).
type bounds struct{ min, max int }

var expected = map[string]map[string]bounds{
	"paho": {
		"subscriber/PUBREC": {1, 1}, "subscriber/PUBREL": {0, 0}, "subscriber/PUBCOMP": {0, 0},
		"publisher/PUBREC": {0, 1}, "publisher/PUBREL": {0, 1}, "publisher/PUBCOMP": {1, 1},
	},
	"paho.golang": {
		"subscriber/PUBREC": {0, 0}, "subscriber/PUBREL": {0, 0}, "subscriber/PUBCOMP": {0, 0},
		"publisher/PUBREC": {0, 0}, "publisher/PUBREL": {0, 0}, "publisher/PUBCOMP": {0, 0},
	},
}

var rounds = flag.Int("qos2.rounds", 1, "runs of each case")

// TestQoS2RawClients loses one PUBREC, PUBREL or PUBCOMP of each faulted
// message on one leg, for each client library, and counts the
// application-level duplicates.
func TestQoS2RawClients(t *testing.T) {
	if testing.Short() {
		t.Skip("raw-client QoS 2 ground truth: a few seconds")
	}
	var rows []string
	for _, client := range []string{"paho", "paho.golang"} {
		for _, leg := range []string{"subscriber", "publisher"} {
			for _, packet := range []string{"PUBREC", "PUBREL", "PUBCOMP"} {
				name := client + "/" + leg + "/" + packet
				t.Run(name, func(t *testing.T) {
					b := expected[client][leg+"/"+packet]
					var faults, dups int
					lo, hi := -1, 0
					for range *rounds {
						res := run(t, client, leg, packet)
						if res.faults != len(faulted) {
							t.Fatalf("%d faults fired, want %d", res.faults, len(faulted))
						}
						if res.lost != 0 {
							t.Errorf("%d messages never delivered (deliveries by message: %s)", res.lost, res.got)
						}
						if res.dups < b.min*res.faults || res.dups > b.max*res.faults {
							t.Errorf("%d duplicates for %d lost %s on the %s leg, want %d to %d (deliveries by message, then the publisher's packets type:id:dup: %s)",
								res.dups, res.faults, packet, leg, b.min*res.faults, b.max*res.faults, res.got)
						}
						faults += res.faults
						dups += res.dups
						if lo < 0 || res.dups < lo {
							lo = res.dups
						}
						hi = max(hi, res.dups)
					}
					rows = append(rows, fmt.Sprintf("%-12s %-11s %-8s %6d %10d %9s", client, leg, packet, faults, dups, fmt.Sprintf("%d-%d", lo, hi)))
				})
			}
		}
	}
	if *table {
		fmt.Printf("raw clients on mochi-mqtt, QoS 2 on both legs, one message in flight, persistent sessions:\n%d round(s) of %d messages with %d lost packets each\n", *rounds, messages, len(faulted))
		fmt.Printf("%-12s %-11s %-8s %6s %10s %9s\n", "client", "leg", "lost", "faults", "duplicates", "per round")
		for _, r := range rows {
			fmt.Println(r)
		}
	}
}

type result struct {
	faults, dups, lost int
	got                string // deliveries by message
}

// run publishes the messages one at a time, each only once the previous
// one's QoS 2 exchanges have ended on both legs.
func run(t *testing.T, client, leg, packet string) result {
	h := &lossHook{leg: leg, packet: packetType[packet], pids: map[string]map[uint16]int{}, done: map[int]bool{}}
	srv := mochi.New(&mochi.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), SysTopicResendInterval: 86400})
	if err := srv.AddHook(h, nil); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.AddListener(listeners.NewNet("truth", dropListener{ln})); err != nil {
		t.Fatal(err)
	}
	if err := srv.Serve(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	addr := "tcp://" + ln.Addr().String()

	var mu sync.Mutex
	got := map[int]int{}
	deliver := func(topic string) {
		n, err := strconv.Atoi(strings.TrimPrefix(topic, "truth/"))
		if err != nil {
			return
		}
		mu.Lock()
		got[n]++
		mu.Unlock()
	}
	var c clients
	if client == "paho" {
		c = pahoClients(t, addr, deliver)
	} else {
		c = autopahoClients(t, addr, deliver)
	}
	defer c.close()

	for n := 1; n <= messages; n++ {
		if faulted[n] {
			h.arm(n)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := c.publish(ctx, "truth/"+strconv.Itoa(n))
		cancel()
		if err != nil {
			t.Fatalf("publish %d: %v", n, err)
		}
		// Both sessions hold nothing in flight, the subscriber is
		// connected, and it has had the message: the exchanges are over.
		settled := func() bool {
			mu.Lock()
			had := got[n] > 0
			mu.Unlock()
			return had && idle(srv, pubID) && idle(srv, subID)
		}
		for deadline := time.Now().Add(20 * time.Second); !settled(); time.Sleep(2 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("message %d: the exchanges did not end within 20s", n)
			}
		}
	}
	var res result
	mu.Lock()
	defer mu.Unlock()
	for n := 1; n <= messages; n++ {
		switch {
		case got[n] == 0:
			res.lost++
		case got[n] > 1:
			res.dups += got[n] - 1
		}
	}
	res.faults = h.fired()
	h.mu.Lock() // the broker's hook may still be appending
	trace := slices.Clone(h.trace)
	h.mu.Unlock()
	res.got = fmt.Sprint(got, trace)
	return res
}

// idle: the client id is connected and its session has nothing in flight.
func idle(srv *mochi.Server, id string) bool {
	cl, ok := srv.Clients.Get(id)
	return ok && !cl.Closed() && cl.State.Inflight.Len() == 0
}

var packetType = map[string]byte{"PUBREC": packets.Pubrec, "PUBREL": packets.Pubrel, "PUBCOMP": packets.Pubcomp}

// lossHook loses the chosen packet of the armed message on the chosen leg
// once and breaks that connection: a packet from the client is never
// processed; a packet to the client is written by the broker and never
// arrives.
type lossHook struct {
	mochi.HookBase
	leg    string
	packet byte

	mu     sync.Mutex
	pids   map[string]map[uint16]int // client id → packet id → message
	armed  int                       // the message whose packet is lost next
	done   map[int]bool
	nfired int
	trace  []string
}

func (h *lossHook) ID() string { return "truth-loss" }

func (h *lossHook) Provides(b byte) bool {
	return bytes.Contains([]byte{mochi.OnPacketRead, mochi.OnPacketEncode, mochi.OnConnectAuthenticate, mochi.OnACLCheck}, []byte{b})
}

// OnConnectAuthenticate lets every client in (loopback, this test only).
func (h *lossHook) OnConnectAuthenticate(*mochi.Client, packets.Packet) bool { return true }

// OnACLCheck allows every topic.
func (h *lossHook) OnACLCheck(*mochi.Client, string, bool) bool { return true }

func (h *lossHook) arm(n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.armed = n
}

func (h *lossHook) fired() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.nfired
}

func (h *lossHook) onLeg(cl *mochi.Client) bool {
	return (h.leg == "publisher" && cl.ID == pubID) || (h.leg == "subscriber" && cl.ID == subID)
}

// learn notes the message a PUBLISH carries under its packet id.
func (h *lossHook) learn(cl *mochi.Client, pk packets.Packet) {
	n, err := strconv.Atoi(strings.TrimPrefix(pk.TopicName, "truth/"))
	if err != nil || pk.FixedHeader.Qos == 0 {
		return
	}
	if h.pids[cl.ID] == nil {
		h.pids[cl.ID] = map[uint16]int{}
	}
	h.pids[cl.ID][pk.PacketID] = n
}

// fires reports whether pk is the packet to lose, and disarms.
func (h *lossHook) fires(cl *mochi.Client, pk packets.Packet) bool {
	if pk.FixedHeader.Type != h.packet || !h.onLeg(cl) {
		return false
	}
	n, ok := h.pids[cl.ID][pk.PacketID]
	if !ok || n != h.armed || h.done[n] {
		return false
	}
	h.done[n] = true
	h.nfired++
	return true
}

// OnPacketRead sees packets from clients: the publisher's PUBLISH, and
// the acks a client sends (PUBREL from the publisher, PUBREC and PUBCOMP
// from the subscriber).
func (h *lossHook) OnPacketRead(cl *mochi.Client, pk packets.Packet) (packets.Packet, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if pk.FixedHeader.Type == packets.Publish && cl.ID == pubID {
		h.learn(cl, pk)
	}
	if cl.ID == pubID {
		h.trace = append(h.trace, fmt.Sprintf("%d:%d:%v", pk.FixedHeader.Type, pk.PacketID, pk.FixedHeader.Dup))
	}
	if h.fires(cl, pk) {
		cl.Stop(errLost)
		return pk, packets.ErrRejectPacket
	}
	return pk, nil
}

var errLost = errors.New("truth: packet lost, connection broken")

// OnPacketEncode sees packets to clients: the subscriber's PUBLISH, and
// the acks the broker sends (PUBREC and PUBCOMP to the publisher, PUBREL
// to the subscriber).
func (h *lossHook) OnPacketEncode(cl *mochi.Client, pk packets.Packet) packets.Packet {
	h.mu.Lock()
	defer h.mu.Unlock()
	if pk.FixedHeader.Type == packets.Publish && cl.ID == subID {
		h.learn(cl, pk)
	}
	if h.fires(cl, pk) {
		var buf bytes.Buffer
		var err error
		switch pk.FixedHeader.Type {
		case packets.Pubrec:
			err = pk.PubrecEncode(&buf)
		case packets.Pubrel:
			err = pk.PubrelEncode(&buf)
		case packets.Pubcomp:
			err = pk.PubcompEncode(&buf)
		}
		if dc, ok := cl.Net.Conn.(*dropConn); ok && err == nil {
			dc.dropWrite(buf.Bytes())
		}
	}
	return pk
}

type dropListener struct{ net.Listener }

func (l dropListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &dropConn{Conn: c}, nil
}

// dropConn loses the write that carries a chosen packet: the broker's
// write succeeds, nothing reaches the client, the connection breaks.
type dropConn struct {
	net.Conn
	mu   sync.Mutex
	drop [][]byte
}

func (c *dropConn) dropWrite(p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drop = append(c.drop, bytes.Clone(p))
}

func (c *dropConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	hit := false
	for i, p := range c.drop {
		if bytes.Contains(b, p) {
			c.drop = append(c.drop[:i], c.drop[i+1:]...)
			hit = true
			break
		}
	}
	c.mu.Unlock()
	if hit {
		c.Conn.Close()
		return len(b), nil
	}
	return c.Conn.Write(b)
}

// clients are one library's publisher and subscriber, each on its
// persistent session, reconnecting by themselves.
type clients struct {
	publish func(ctx context.Context, topic string) error
	close   func()
}

// reconnectWait is how long the clients wait before reconnecting, set
// deliberately: paho.mqtt.golang's backoff doubles on connections lost
// within 3s of each other, up to 10 minutes by default.
const reconnectWait = 20 * time.Millisecond

func pahoOptions(addr, id string) *pahomqtt.ClientOptions {
	return pahomqtt.NewClientOptions().AddBroker(addr).SetClientID(id).
		SetCleanSession(false).SetProtocolVersion(4).
		SetAutoReconnect(true).SetMaxReconnectInterval(reconnectWait).
		SetOrderMatters(true)
}

// pahoClients: eclipse/paho.mqtt.golang with its default memory store and
// auto ack (PUBREC once the handler returned).
func pahoClients(t *testing.T, addr string, deliver func(topic string)) clients {
	sub := pahomqtt.NewClient(pahoOptions(addr, subID).SetDefaultPublishHandler(func(_ pahomqtt.Client, m pahomqtt.Message) {
		deliver(m.Topic())
	}))
	if tk := sub.Connect(); !tk.WaitTimeout(10*time.Second) || tk.Error() != nil {
		t.Fatalf("subscriber connect: %v", tk.Error())
	}
	if tk := sub.Subscribe("truth/+", 2, nil); !tk.WaitTimeout(10*time.Second) || tk.Error() != nil {
		t.Fatalf("subscribe: %v", tk.Error())
	}
	pub := pahomqtt.NewClient(pahoOptions(addr, pubID))
	if tk := pub.Connect(); !tk.WaitTimeout(10*time.Second) || tk.Error() != nil {
		t.Fatalf("publisher connect: %v", tk.Error())
	}
	return clients{
		publish: func(ctx context.Context, topic string) error {
			tk := pub.Publish(topic, 2, false, []byte(topic))
			select {
			case <-tk.Done():
				return tk.Error()
			case <-ctx.Done():
				return ctx.Err()
			}
		},
		close: func() { pub.Disconnect(50); sub.Disconnect(50) },
	}
}

// autopahoClients: eclipse/paho.golang's autopaho, with its in-memory
// session state and auto ack.
func autopahoClients(t *testing.T, addr string, deliver func(topic string)) clients {
	u, err := url.Parse(addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	subscribed := make(chan error, 1)
	cfg := func(id string) autopaho.ClientConfig {
		return autopaho.ClientConfig{
			ServerUrls: []*url.URL{u}, KeepAlive: 30,
			SessionExpiryInterval: 3600,
			ReconnectBackoff:      autopaho.NewConstantBackoff(reconnectWait),
			ClientConfig:          pahov5.ClientConfig{ClientID: id},
		}
	}
	sc := cfg(subID)
	sc.OnConnectionUp = func(cm *autopaho.ConnectionManager, ca *pahov5.Connack) {
		if ca.SessionPresent {
			return // the broker kept the subscription
		}
		go func() {
			_, err := cm.Subscribe(ctx, &pahov5.Subscribe{Subscriptions: []pahov5.SubscribeOptions{{Topic: "truth/+", QoS: 2}}})
			subscribed <- err
		}()
	}
	sc.OnPublishReceived = []func(pahov5.PublishReceived) (bool, error){func(pr pahov5.PublishReceived) (bool, error) {
		deliver(pr.Packet.Topic)
		return true, nil
	}}
	sub, err := autopaho.NewConnection(ctx, sc)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-subscribed:
		if err != nil {
			t.Fatalf("subscribe: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no subscription within 10s")
	}
	pub, err := autopaho.NewConnection(ctx, cfg(pubID))
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := pub.AwaitConnection(wctx); err != nil {
		t.Fatalf("publisher connect: %v", err)
	}
	return clients{
		publish: func(ctx context.Context, topic string) error {
			for {
				// After a fault broke the connection, autopaho refuses a
				// publish until it has reconnected: nothing is sent then,
				// so waiting and publishing again is not a resend.
				if err := pub.AwaitConnection(ctx); err != nil {
					return err
				}
				_, err := pub.Publish(ctx, &pahov5.Publish{QoS: 2, Topic: topic, Payload: []byte(topic)})
				if !errors.Is(err, autopaho.ConnectionDownError) {
					return err
				}
			}
		},
		close: func() {
			dctx, dcancel := context.WithTimeout(context.Background(), time.Second)
			defer dcancel()
			_ = pub.Disconnect(dctx)
			_ = sub.Disconnect(dctx)
			cancel()
		},
	}
}
