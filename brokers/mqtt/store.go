package mqtt

import (
	"bytes"
	"slices"
	"strings"
	"sync"

	"github.com/eclipse/paho.mqtt.golang/packets"
)

// sessionStore is the client side of an MQTT session (the unacknowledged
// publishes, the received QoS 2 ids awaiting PUBREL): it outlives each
// client instance, as a file store outlives a process restart, so a
// restarted consumer or a reconnected publisher resumes the session the
// broker kept. Each instance sees it through its own view (paho opens and
// closes its store with each connection).
//
// It keeps each packet as its bytes, and Get decodes a fresh copy, as a
// file store reads one from disk: paho's MemoryStore hands back the very
// packet the client sent, and resume() sets DUP on it at a reconnect
// while the outgoing goroutine of the connection that just died may still
// be writing it, a data race -race reports (eclipse-paho/paho.mqtt.golang
// #703, open; v1.5.1 is the latest release, the maintainers' proposed fix
// is a store that returns a copy).
type sessionStore struct {
	mu       sync.Mutex
	messages map[string][]byte
}

func newSessionStore() *sessionStore {
	return &sessionStore{messages: map[string][]byte{}}
}

// view is one client instance's handle on the store.
func (s *sessionStore) view() *storeView { return &storeView{s: s} }

// storeView implements paho's Store for one client instance.
type storeView struct{ s *sessionStore }

func (v *storeView) Open()  {}
func (v *storeView) Close() {}

// Put keeps m's bytes. paho stores an outgoing packet before it hands it
// to the outgoing goroutine, so nothing writes it meanwhile.
func (v *storeView) Put(key string, m packets.ControlPacket) {
	var b bytes.Buffer
	if err := m.Write(&b); err != nil {
		return // nothing to resume from: as a file store that failed to write
	}
	v.s.mu.Lock()
	defer v.s.mu.Unlock()
	v.s.messages[key] = b.Bytes()
}

// Get decodes a fresh copy of the packet stored under key (nil when none).
func (v *storeView) Get(key string) packets.ControlPacket {
	v.s.mu.Lock()
	b, ok := v.s.messages[key]
	v.s.mu.Unlock()
	if !ok {
		return nil
	}
	m, err := packets.ReadPacket(bytes.NewReader(b))
	if err != nil {
		return nil
	}
	return m
}

func (v *storeView) All() []string {
	v.s.mu.Lock()
	defer v.s.mu.Unlock()
	keys := make([]string, 0, len(v.s.messages))
	for k := range v.s.messages {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (v *storeView) Del(key string) {
	v.s.mu.Lock()
	defer v.s.mu.Unlock()
	delete(v.s.messages, key)
}

func (v *storeView) Reset() {
	v.s.mu.Lock()
	defer v.s.mu.Unlock()
	clear(v.s.messages)
}

// outbound counts the client's own publishes the broker has not yet
// completed (paho keeps each under "o.<packet id>" until PUBACK or
// PUBCOMP).
func (s *sessionStore) outbound() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k := range s.messages {
		if strings.HasPrefix(k, "o.") {
			n++
		}
	}
	return n
}
