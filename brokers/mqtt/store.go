package mqtt

import (
	"slices"
	"sync"

	"github.com/eclipse/paho.mqtt.golang/packets"
)

// sessionStore is the client side of an MQTT session (the unacknowledged
// publishes, the received QoS 2 ids awaiting PUBREL): it outlives each
// client instance, as a file store outlives a process restart, so a
// restarted consumer or a reconnected publisher resumes the session the
// broker kept. Each instance sees it through its own view (paho opens and
// closes its store with each connection).
type sessionStore struct {
	mu       sync.Mutex
	messages map[string]packets.ControlPacket
}

func newSessionStore() *sessionStore {
	return &sessionStore{messages: map[string]packets.ControlPacket{}}
}

// view is one client instance's handle on the store.
func (s *sessionStore) view() *storeView { return &storeView{s: s} }

// storeView implements paho's Store for one client instance.
type storeView struct{ s *sessionStore }

func (v *storeView) Open()  {}
func (v *storeView) Close() {}

func (v *storeView) Put(key string, m packets.ControlPacket) {
	v.s.mu.Lock()
	defer v.s.mu.Unlock()
	v.s.messages[key] = m
}

func (v *storeView) Get(key string) packets.ControlPacket {
	v.s.mu.Lock()
	defer v.s.mu.Unlock()
	return v.s.messages[key]
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
