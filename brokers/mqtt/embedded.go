package mqtt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
)

// embedded is a mochi-mqtt server on a loopback port. Its hook (faultHook)
// sees every packet of every variant's clients: it tracks which intent
// each packet id carries, counts the backlog, tells a consumer when the
// broker has processed its ack, and injects the packet faults.
type embedded struct {
	srv  *mochi.Server
	hook *faultHook
	addr string
}

func startEmbedded() (*embedded, error) {
	srv := mochi.New(&mochi.Options{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		// $SYS topics once a day: nothing of dqbench's.
		SysTopicResendInterval: 86400,
	})
	hook := &faultHook{clients: map[string]*destState{}}
	e := &embedded{srv: srv, hook: hook}
	hook.embedded = e
	if err := srv.AddHook(hook, nil); err != nil {
		return nil, fmt.Errorf("start embedded MQTT (mochi-mqtt): %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start embedded MQTT (mochi-mqtt): %w", err)
	}
	if err := srv.AddListener(listeners.NewNet("dqbench", faultListener{ln})); err != nil {
		ln.Close()
		return nil, fmt.Errorf("start embedded MQTT (mochi-mqtt): %w", err)
	}
	if err := srv.Serve(); err != nil {
		srv.Close()
		return nil, fmt.Errorf("start embedded MQTT (mochi-mqtt): %w", err)
	}
	e.addr = ln.Addr().String()
	return e, nil
}

func (e *embedded) close() error { return e.srv.Close() }

// backlog is what the broker holds for d's consumers: publishes it is
// routing (received, not yet handed to the subscription) or holding for
// a subscriber-offline window, one while the subscriber is away, and messages in
// the consumer sessions not yet acknowledged (PUBACK for QoS 1, PUBREC for
// QoS 2), a session whose instance crashed included.
//
// While a replacement consumer takes the session over, what it holds is
// not known: mochi-mqtt moves the old connection's messages to the new one
// and empties the old one before it lists the new one, so for a moment the
// session it lists is the old, empty one. Counted then, a drain could end
// with the messages still in the session, never delivered.
func (e *embedded) backlog(ctx context.Context, d *dest) (int64, error) {
	st := d.state
	if err := st.settleLagging(ctx); err != nil {
		return 0, err
	}
	st.mu.Lock()
	n := int64(st.routing + st.gated + len(st.subscribing))
	if st.offline != nil && st.offline.phase == away {
		n++ // the drain waits for the window's end, and its fault event
	}
	st.mu.Unlock()
	for _, s := range d.subs {
		cl, ok := e.srv.Clients.Get(s.id)
		if !ok {
			continue
		}
		if cl.IsTakenOver() {
			return 0, errTakeover
		}
		if d.legQoS(catalog.SubscriberLeg) < 2 {
			// Only PUBLISHes wait for a QoS 1 subscriber's ack: count them
			// without GetAll, which copies and sorts them all (the drain
			// asks every 20 ms, while thousands may be queued).
			n += int64(cl.State.Inflight.Len())
			continue
		}
		for _, pk := range cl.State.Inflight.GetAll(false) {
			if pk.FixedHeader.Type == packets.Publish {
				n++
			}
		}
	}
	return n, nil
}

// errTakeover says the consumer's session is being taken over.
var errTakeover = errors.New("a replacement consumer is taking the session over")

// embeddedDest is a destination on the embedded broker, which can also
// lose packets and break connections.
type embeddedDest struct{ *dest }

var (
	_ brokers.Destination   = embeddedDest{}
	_ brokers.Powered       = embeddedDest{}
	_ brokers.LimitReporter = embeddedDest{}
)

// Limits names mochi-mqtt's per-session limit: past maximum_inflight
// unacknowledged QoS 1 and 2 messages (and past 65,535, its packet ids)
// it drops each new one for that session, telling no client. A report
// names it as the cause of such a loss.
func (d embeddedDest) Limits() string {
	l := fmt.Sprintf("mochi-mqtt maximum_inflight %d unacknowledged QoS 1 and 2 messages per session", d.b.embedded.srv.Options.Capabilities.MaximumInflight)
	if d.expiry > 0 {
		l += fmt.Sprintf("; the consumer's session expiry %s (the broker ends a session offline longer, with what it holds)", d.expiry)
	}
	return l
}

// Apply injects the embedded broker's fault powers: lost packets, broken
// connections and an offline subscriber.
func (d embeddedDest) Apply(_ context.Context, p brokers.Power) error {
	switch p := p.(type) {
	case brokers.LosePackets:
		return armed(d.losePackets(p.Packet, p.Leg, p.Fires, p.Lost))
	case brokers.Disconnect:
		return armed(d.disconnect(p.Leg, p.Fires, p.Cut))
	case brokers.TakeOffline:
		return armed(d.takeOffline(p))
	}
	return brokers.NoPower(p)
}

// armed is what Apply returns for a power that acts (true) or has nothing
// to act on here.
func armed(ok bool) error {
	if !ok {
		return brokers.ErrNowhere
	}
	return nil
}

// losePackets loses packet on leg for the intents fires chooses; it acts
// only where the leg's QoS has that packet.
func (d embeddedDest) losePackets(packet catalog.MQTTPacket, leg catalog.Leg, fires func(intent, attempt int) bool, lost func(intent int)) bool {
	if int(d.legQoS(leg)) != packet.QoS() {
		return false
	}
	d.state.addRule(&rule{packet: packetType[packet], leg: leg, fires: fires, fired: lost, seen: map[int]int{}})
	return true
}

// disconnect breaks the leg's client connection right after the broker
// handled the chosen intents' PUBLISH on that leg.
func (d embeddedDest) disconnect(leg catalog.Leg, fires func(intent, attempt int) bool, cut func(intent int)) bool {
	d.state.addRule(&rule{packet: packets.Publish, leg: leg, disconnect: true, fires: fires, fired: cut, seen: map[int]int{}})
	return true
}

var packetType = map[catalog.MQTTPacket]byte{
	catalog.PUBACK: packets.Puback, catalog.PUBREC: packets.Pubrec,
	catalog.PUBREL: packets.Pubrel, catalog.PUBCOMP: packets.Pubcomp,
}

// rule is one armed fault.
type rule struct {
	packet     byte
	leg        catalog.Leg
	disconnect bool // break the connection after the packet; else lose it
	fires      func(intent, attempt int) bool
	fired      func(intent int)
	seen       map[int]int // intent → times the packet passed for it
}

// destState is what the hook knows of one destination (and, in each
// consumer session, of its packet ids and acks).
type destState struct {
	d        *dest
	sessions map[string]*subSession // by client id
	mu       sync.Mutex
	pubPIDs  map[uint16]int // publisher packet id → intent
	routing  int            // publishes between OnPublish and OnPublished
	// subscribing are the consumer connections whose SUBSCRIBE the broker
	// is processing: mochi writes the SUBACK before it sends the retained
	// messages the subscription matches, so until it has, what it will
	// send is in no session yet.
	subscribing map[*mochi.Client]bool
	gated       int // publishes held in OnPublish by subscriber-offline
	// takeover is closed while no consumer connection is taking over a
	// session (taking counts those that are); see OnSessionEstablish.
	takeover chan struct{}
	taking   int
	// lagging are the consumer's PUBACKs written without waiting for the
	// broker to process them (Ack on a quiet destination), oldest first,
	// with the connection that wrote each: Backlog waits for them.
	lagging []laggingAck
	rules   []*rule
	offline *offline // subscriber-offline (offline.go)
}

func (st *destState) addRule(r *rule) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.rules = append(st.rules, r)
}

// hit reports whether a rule fires for packet type t of intent on leg,
// counting the sighting; st.mu is held.
func (st *destState) hit(t byte, leg catalog.Leg, intent int, disconnect bool) *rule {
	for _, r := range st.rules {
		if r.packet != t || r.leg != leg || r.disconnect != disconnect {
			continue
		}
		r.seen[intent]++
		if r.fires(intent, r.seen[intent]) {
			return r
		}
	}
	return nil
}

// quiet reports whether no fault acts on the destination's connections
// through the hook: no rule loses or breaks anything, no subscriber-offline
// window. Then nothing that follows a consumer's ack depends on when the
// broker processes it, except a crash point, which syncs the acks first
// (brokers.SyncAcks).
func (st *destState) quiet() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.rules) == 0 && st.offline == nil
}

// awaitAck returns a channel closed once the broker has processed the
// ack of packet id pid on consumer session s.
func (st *destState) awaitAck(s *subSession, pid uint16) chan struct{} {
	st.mu.Lock()
	defer st.mu.Unlock()
	ch := make(chan struct{})
	if old, ok := s.acks[pid]; ok {
		close(old)
	}
	s.acks[pid] = ch
	return ch
}

// laggingAck is a PUBACK written and not yet known processed.
type laggingAck struct {
	processed chan struct{}
	conn      *mochi.Client // the consumer connection that wrote it
}

// lag notes a PUBACK the consumer wrote without waiting: processed is
// awaitAck's channel for it. The broker processes a connection's packets
// in order, so the processed ones are dropped from the front.
func (st *destState) lag(s *subSession, processed chan struct{}) {
	conn, _ := st.d.b.embedded.srv.Clients.Get(s.id)
	st.mu.Lock()
	defer st.mu.Unlock()
	st.lagging = slices.DeleteFunc(st.lagging, laggingAck.settled)
	st.lagging = append(st.lagging, laggingAck{processed, conn})
}

// settled: the broker processed it, or its connection is gone (then the
// broker never will, and delivers the message again).
func (a laggingAck) settled() bool {
	select {
	case <-a.processed:
		return true
	default:
		return a.conn == nil || a.conn.Closed()
	}
}

// settleLagging waits until every lagging PUBACK is settled, so that
// Backlog counts exactly what the consumer has not acked.
func (st *destState) settleLagging(ctx context.Context) error {
	for {
		st.mu.Lock()
		st.lagging = slices.DeleteFunc(st.lagging, laggingAck.settled)
		var next chan struct{}
		if len(st.lagging) > 0 {
			next = st.lagging[len(st.lagging)-1].processed
		}
		st.mu.Unlock()
		if next == nil {
			return nil
		}
		t := time.NewTimer(5 * time.Millisecond) // to see a connection go
		select {
		case <-next:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		t.Stop()
	}
}

// awaitComplete returns a channel closed once the broker has processed the
// PUBCOMP of packet id pid on consumer session s: the end of a QoS 2
// exchange.
func (st *destState) awaitComplete(s *subSession, pid uint16) chan struct{} {
	st.mu.Lock()
	defer st.mu.Unlock()
	ch := make(chan struct{})
	if old, ok := s.comps[pid]; ok {
		close(old)
	}
	s.comps[pid] = ch
	return ch
}

// faultHook is the mochi hook of the embedded broker.
type faultHook struct {
	mochi.HookBase
	embedded *embedded
	mu       sync.Mutex
	clients  map[string]*destState // by client id
}

func (h *faultHook) add(d *dest) *destState {
	st := &destState{d: d, sessions: map[string]*subSession{}, pubPIDs: map[uint16]int{}, takeover: closed()}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.clients[d.pubID] = st
	for _, s := range d.subs {
		st.sessions[s.id] = s
		h.clients[s.id] = st
	}
	return st
}

func (h *faultHook) remove(d *dest) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.clients, d.pubID)
	for _, s := range d.subs {
		delete(h.clients, s.id)
	}
}

func (h *faultHook) state(cl *mochi.Client) (*destState, catalog.Leg) {
	h.mu.Lock()
	st := h.clients[cl.ID]
	h.mu.Unlock()
	if st == nil {
		return nil, ""
	}
	if cl.ID == st.d.pubID {
		return st, catalog.PublisherLeg
	}
	return st, catalog.SubscriberLeg
}

// ID names the hook.
func (h *faultHook) ID() string { return "dqbench-faults" }

// Provides lists the events the hook handles.
func (h *faultHook) Provides(b byte) bool {
	return bytes.Contains([]byte{
		mochi.OnPacketRead, mochi.OnPacketEncode, mochi.OnPacketSent, mochi.OnPacketProcessed,
		mochi.OnPublish, mochi.OnPublished, mochi.OnDisconnect, mochi.OnSelectSubscribers, mochi.OnClientExpired,
		mochi.OnSessionEstablish, mochi.OnSessionEstablished,
		mochi.OnConnectAuthenticate, mochi.OnACLCheck,
	}, []byte{b})
}

// OnConnectAuthenticate lets every client in (the broker listens on
// loopback for this run only), except a subscriber kept offline by a
// fault.
func (h *faultHook) OnConnectAuthenticate(cl *mochi.Client, _ packets.Packet) bool {
	return !h.refuses(cl)
}

// OnACLCheck allows every topic.
func (h *faultHook) OnACLCheck(*mochi.Client, string, bool) bool { return true }

// OnPacketRead sees packets from clients: it learns the publisher's packet
// ids, and loses the acks a client sends (the publisher's PUBREL, the
// consumer's PUBACK, PUBREC, PUBCOMP) where a rule says so: the broker
// never processes it and the client's connection breaks.
func (h *faultHook) OnPacketRead(cl *mochi.Client, pk packets.Packet) (packets.Packet, error) {
	st, leg := h.state(cl)
	if st == nil {
		return pk, nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	t := pk.FixedHeader.Type
	switch {
	case t == packets.Publish && leg == catalog.PublisherLeg:
		if in, err := st.d.intentOf(pk.TopicName); err == nil && pk.FixedHeader.Qos > 0 {
			st.pubPIDs[pk.PacketID] = in
		}
	case t == packets.Subscribe && leg == catalog.SubscriberLeg:
		if st.subscribing == nil {
			st.subscribing = map[*mochi.Client]bool{}
		}
		st.subscribing[cl] = true
	case t == packets.Puback, t == packets.Pubrec, t == packets.Pubrel, t == packets.Pubcomp:
		intent, ok := st.pidsOf(cl.ID)[pk.PacketID]
		if !ok {
			break
		}
		if r := st.hit(t, leg, intent, false); r != nil {
			r.fired(intent)
			cl.Stop(errPacketLost)
			return pk, packets.ErrRejectPacket
		}
	}
	return pk, nil
}

var errPacketLost = errors.New("dqbench: packet lost, connection broken")

// pidsOf maps the packet ids of client id's session to intents.
func (st *destState) pidsOf(id string) map[uint16]int {
	if s, ok := st.sessions[id]; ok {
		return s.pids
	}
	return st.pubPIDs
}

// OnPacketEncode sees packets to clients: it learns the consumer's packet
// ids, and loses the acks the broker sends (PUBACK, PUBREC, PUBCOMP to the
// publisher, PUBREL to the consumer) where a rule says so: the broker
// writes it, the bytes never arrive and the connection breaks.
func (h *faultHook) OnPacketEncode(cl *mochi.Client, pk packets.Packet) packets.Packet {
	st, leg := h.state(cl)
	if st == nil {
		return pk
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	t := pk.FixedHeader.Type
	switch {
	case t == packets.Publish && leg == catalog.SubscriberLeg:
		if in, err := st.d.intentOf(pk.TopicName); err == nil && pk.FixedHeader.Qos > 0 {
			st.pidsOf(cl.ID)[pk.PacketID] = in
		}
	case t == packets.Puback, t == packets.Pubrec, t == packets.Pubrel, t == packets.Pubcomp:
		intent, ok := st.pidsOf(cl.ID)[pk.PacketID]
		if !ok {
			break
		}
		fc, isFault := cl.Net.Conn.(*faultConn)
		if !isFault {
			break
		}
		if r := st.hit(t, leg, intent, false); r != nil {
			var buf bytes.Buffer
			if err := encodeAck(pk, &buf); err == nil {
				r.fired(intent)
				fc.dropWrite(buf.Bytes())
			}
		}
	}
	return pk
}

// encodeAck encodes an ack the way WritePacket will.
func encodeAck(pk packets.Packet, buf *bytes.Buffer) error {
	switch pk.FixedHeader.Type {
	case packets.Puback:
		return pk.PubackEncode(buf)
	case packets.Pubrec:
		return pk.PubrecEncode(buf)
	case packets.Pubrel:
		return pk.PubrelEncode(buf)
	case packets.Pubcomp:
		return pk.PubcompEncode(buf)
	}
	return fmt.Errorf("not an ack: %v", pk.FixedHeader.Type)
}

// OnPacketSent breaks the consumer's connection after the chosen intent's
// PUBLISH (disconnect on the subscriber leg).
func (h *faultHook) OnPacketSent(cl *mochi.Client, pk packets.Packet, _ []byte) {
	st, leg := h.state(cl)
	if st == nil || leg != catalog.SubscriberLeg || pk.FixedHeader.Type != packets.Publish {
		return
	}
	if pk.FixedHeader.Qos == 0 {
		st.d.qos0Seen()
	}
	intent, err := st.d.intentOf(pk.TopicName)
	if err != nil {
		return
	}
	st.mu.Lock()
	r := st.hit(packets.Publish, leg, intent, true)
	st.mu.Unlock()
	if r != nil {
		r.fired(intent)
		cl.Stop(errDisconnected)
	}
}

var errDisconnected = errors.New("dqbench: connection broken by fault")

// OnPacketProcessed tells a consumer waiting for its ack that the broker
// has it, and at QoS 2 that the exchange has ended; after a SUBSCRIBE, the
// retained messages it matched are in the session.
func (h *faultHook) OnPacketProcessed(cl *mochi.Client, pk packets.Packet, err error) {
	st, leg := h.state(cl)
	if st == nil || leg != catalog.SubscriberLeg {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if pk.FixedHeader.Type == packets.Subscribe {
		delete(st.subscribing, cl)
	}
	if err != nil {
		return
	}
	s := st.sessions[cl.ID]
	waiting := s.acks
	switch pk.FixedHeader.Type {
	case packets.Puback, packets.Pubrec:
	case packets.Pubcomp:
		waiting = s.comps
	default:
		return
	}
	if ch, ok := waiting[pk.PacketID]; ok {
		close(ch)
		delete(waiting, pk.PacketID)
	}
}

// OnSessionEstablish holds the variant's publishes while a consumer
// connection takes over the session. mochi-mqtt v2.7.9 copies the old
// session's in-flight messages to the new client before it registers the
// new client, and clears the old one's after: a message routed in between
// is lost. That race is mochi's, not a lesson of any scenario, so the
// embedded broker closes it; external brokers are measured as they are.
// With a shared subscription several sessions may be taken over at once:
// publishes wait until none is.
//
// It also waits for an earlier connection with the same client id whose
// session ends with it (a clean session) to be gone. mochi-mqtt v2.7.9
// removes such a connection, as it ends, by client id: if the new one
// registered in between, the broker forgets the new one, which then gets
// the retained messages of its subscription and nothing published after.
func (h *faultHook) OnSessionEstablish(cl *mochi.Client, _ packets.Packet) {
	if st, leg := h.state(cl); st != nil && leg == catalog.SubscriberLeg {
		h.awaitEnded(cl.ID)
		st.mu.Lock()
		if st.taking == 0 {
			st.takeover = make(chan struct{})
		}
		st.taking++
		st.mu.Unlock()
		// Publishes already being routed finish first (bounded, as below).
		for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Microsecond) {
			st.mu.Lock()
			routing := st.routing
			st.mu.Unlock()
			if routing == 0 {
				break
			}
		}
	}
}

// endingWait bounds how long a new consumer connection waits for an
// earlier one with its client id to end once the broker has closed it;
// openWait, for one still open (its DISCONNECT, or the end of its
// socket, on the way): a half-open connection after a partition is taken
// over after it, as the broker would.
const (
	endingWait = 2 * time.Second
	openWait   = 20 * time.Millisecond
)

// awaitEnded waits until no connection with client id whose session ends
// with it is registered on the broker (bounded by endingWait and openWait).
func (h *faultHook) awaitEnded(id string) {
	start := time.Now()
	for ; time.Since(start) < endingWait; time.Sleep(200 * time.Microsecond) {
		old, ok := h.embedded.srv.Clients.Get(id)
		if !ok || old.IsTakenOver() || !endsWithConnection(old) || !old.Closed() && time.Since(start) >= openWait {
			return
		}
	}
}

// endsWithConnection: the broker discards the client's session when its
// connection ends (MQTT 3 clean session; MQTT 5 session expiry 0).
func endsWithConnection(cl *mochi.Client) bool {
	if cl.Properties.ProtocolVersion == 5 {
		return cl.Properties.Props.SessionExpiryInterval == 0
	}
	return cl.Properties.Clean
}

// OnSessionEstablished: the new consumer connection is registered.
func (h *faultHook) OnSessionEstablished(cl *mochi.Client, _ packets.Packet) {
	if st, leg := h.state(cl); st != nil && leg == catalog.SubscriberLeg {
		st.endTakeover(false)
	}
}

// endTakeover notes a takeover ended, or with all every one under way (a
// wait that ran out: a connection that fails half-way never reports its
// end).
func (st *destState) endTakeover(all bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.taking = max(st.taking-1, 0)
	if all {
		st.taking = 0
	}
	if st.taking > 0 {
		return
	}
	select {
	case <-st.takeover:
	default:
		close(st.takeover)
	}
}

func closed() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}

// OnPublish counts a publish the broker is routing, once no takeover of
// the consumer session is under way (bounded: a connection that fails
// half-way never reports its end).
func (h *faultHook) OnPublish(cl *mochi.Client, pk packets.Packet) (packets.Packet, error) {
	if st, leg := h.state(cl); st != nil && leg == catalog.PublisherLeg {
		if intent, err := st.d.intentOf(pk.TopicName); err == nil {
			// Counted as backlog while it waits there, so that the drain
			// does not end under a held publish.
			st.mu.Lock()
			st.gated++
			st.mu.Unlock()
			h.beforeRoute(st, intent)
			st.mu.Lock()
			st.gated--
			st.mu.Unlock()
		}
		// Checked and counted under one lock: a takeover that starts
		// after the check sees this publish as routing and waits for it.
		deadline := time.Now().Add(time.Second)
		for {
			st.mu.Lock()
			takeover := st.takeover
			select {
			case <-takeover:
				st.routing++
				st.mu.Unlock()
				return pk, nil
			default:
			}
			st.mu.Unlock()
			select {
			case <-takeover:
			case <-time.After(time.Until(deadline)):
				st.endTakeover(true)
			}
		}
	}
	return pk, nil
}

// OnPublished: the publish is in the subscription (or dropped by the
// broker). It breaks the publisher's connection after the chosen
// intents (disconnect on the publisher leg).
func (h *faultHook) OnPublished(cl *mochi.Client, pk packets.Packet) {
	st, leg := h.state(cl)
	if st == nil || leg != catalog.PublisherLeg {
		return
	}
	if pk.FixedHeader.Qos == 0 || st.d.subQoS == 0 {
		st.d.qos0Seen()
	}
	intent, err := st.d.intentOf(pk.TopicName)
	if err == nil {
		// Before the publish stops counting as backlog: a window's fault
		// event comes before the drain can end.
		h.afterRoute(st, intent)
	}
	st.mu.Lock()
	st.routing = max(st.routing-1, 0)
	var r *rule
	if err == nil {
		r = st.hit(packets.Publish, leg, intent, true)
	}
	st.mu.Unlock()
	if r != nil {
		r.fired(intent)
		cl.Stop(errDisconnected)
	}
}

// OnDisconnect: a publisher's read loop has ended, so no publish of it is
// being routed any more; a consumer's, so no SUBSCRIBE of it is being
// processed.
func (h *faultHook) OnDisconnect(cl *mochi.Client, _ error, _ bool) {
	st, leg := h.state(cl)
	if st == nil {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if leg == catalog.PublisherLeg {
		st.routing = 0
	} else {
		delete(st.subscribing, cl) // a SUBSCRIBE that failed validation is never processed
	}
}

// faultListener wraps every accepted connection in a faultConn.
type faultListener struct{ net.Listener }

func (l faultListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &faultConn{Conn: c}, nil
}

// faultConn is a broker-side connection that can lose a chosen packet: the
// write that carries it succeeds for the broker, nothing reaches the
// client, and the connection breaks (as when a network path dies after
// the broker has written). The broker's later writes on it succeed too and
// go nowhere, as on a dead path: failing them (as the closed socket would)
// is a reset, and mochi v2.7.9 loses a QoS 2 PUBLISH whose PUBREC write
// fails (docs/scenario.md, "Other seeds" after the QoS 2 table).
type faultConn struct {
	net.Conn
	mu   sync.Mutex
	drop [][]byte
	dead bool // a packet was lost: what follows goes nowhere
}

func (c *faultConn) dropWrite(packet []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drop = append(c.drop, bytes.Clone(packet))
}

func (c *faultConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	if c.dead {
		c.mu.Unlock()
		return len(b), nil
	}
	hit := false
	for i, p := range c.drop {
		if bytes.Contains(b, p) {
			c.drop = append(c.drop[:i], c.drop[i+1:]...)
			hit = true
			c.dead = true
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

// waitAck waits until the embedded broker has processed the consumer's
// ack, or the connection is lost.
func waitAck(ctx context.Context, ch chan struct{}, lost <-chan struct{}) error {
	t := time.NewTimer(ackWaitLimit)
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-lost:
		return errConnectionLost
	case <-t.C:
		// Never a stall of dqbench's own: a sign that never comes is
		// handled as a connection that went away.
		return fmt.Errorf("%w (no sign of it in %s)", errConnectionLost, ackWaitLimit)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ackWaitLimit bounds each wait for a sign from the embedded broker.
const ackWaitLimit = 5 * time.Second

var errConnectionLost = errors.New("mqtt: connection lost before the broker had the ack")

// waitComplete waits, after the broker has processed a QoS 2 consumer's
// PUBREC, until the exchange has ended (PUBCOMP processed) or the
// connection is lost: either way the ack stands (the broker re-sends only
// PUBREL), and the client would not have handed over the next message
// before. A nil ch (QoS 1) returns at once.
func waitComplete(ctx context.Context, ch chan struct{}, lost <-chan struct{}) error {
	if ch == nil {
		return nil
	}
	t := time.NewTimer(ackWaitLimit)
	defer t.Stop()
	select {
	case <-ch:
	case <-lost:
	case <-t.C: // the ack stands either way: never a stall of dqbench's own
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}
