package mqtt

import (
	"slices"
	"sort"
	"strconv"

	"github.com/eclipse/paho.golang/paho/session/state"
	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// subSession is one consumer session: its client id, the client side of its
// state, and what the packet ids of its copies carry (packet ids are per
// session). A variant with one consumer instance has one, client id
// dqb-NAME-s, subscribed to dqbench/NAME/+. With consumer.instances N > 1
// it has N, dqb-NAME-s1 to dqb-NAME-sN, each subscribed to the shared
// subscription $share/dqb-NAME/dqbench/NAME/+: the broker gives each
// message to one of them. A consumer instance holds one session while it
// lives; its replacement after a crash connects with the same client id,
// as a restarted process with its configured id would, and resumes it.
type subSession struct {
	id string
	n  int // 1 to N with a shared subscription; 0 for the variant's only session
	// store and v5 are the client side of the session: paho's and
	// paho.golang's.
	store *sessionStore
	v5    *state.State

	// Guarded by the dest's mu.
	positions  map[uint16]copyRef // packet id → the copy it carried
	busy       bool               // a consumer instance holds it
	subscribed bool               // the broker keeps messages for it

	// Guarded by the destState's mu (embedded broker).
	pids  map[uint16]int           // packet id → intent
	acks  map[uint16]chan struct{} // closed once the broker processed the ack
	comps map[uint16]chan struct{} // QoS 2: closed once the broker processed PUBCOMP
}

func newSession(id string, n int) *subSession {
	return &subSession{
		id: id, n: n, store: newSessionStore(), v5: state.NewInMemory(),
		positions: map[uint16]copyRef{},
		pids:      map[uint16]int{}, acks: map[uint16]chan struct{}{}, comps: map[uint16]chan struct{}{},
	}
}

// sessions makes the destination's consumer sessions and topic filter for
// instances consumer instances.
func (d *dest) sessions(instances int) {
	if instances <= 1 {
		d.subs = []*subSession{newSession("dqb-"+d.name+"-s", 0)}
		d.filter = d.topic + "+"
		return
	}
	for i := 1; i <= instances; i++ {
		d.subs = append(d.subs, newSession("dqb-"+d.name+"-s"+strconv.Itoa(i), i))
	}
	d.filter = "$share/" + d.group() + "/" + d.topic + "+"
}

// group is the shared subscription's group name.
func (d *dest) group() string { return "dqb-" + d.name }

// shared says whether the consumers share one subscription.
func (d *dest) shared() bool { return len(d.subs) > 1 }

// claim gives a starting consumer instance a session no other instance
// holds, the first free one (a replacement gets the session of the
// instance it replaces). When all are held, which the runner never asks
// for, it takes gen's over (the broker then closes the holder's
// connection), as the single session always was.
func (d *dest) claim(gen int) *subSession {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, s := range d.subs {
		if !s.busy {
			s.busy = true
			return s
		}
	}
	s := d.subs[(gen-1)%len(d.subs)]
	s.busy = true
	return s
}

// release frees s for the next instance.
func (d *dest) release(s *subSession) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s.busy = false
}

// markSubscribed notes that the broker keeps messages for s; once it does
// for every session, the producer may start.
func (d *dest) markSubscribed(s *subSession) {
	d.mu.Lock()
	s.subscribed = true
	all := !slices.ContainsFunc(d.subs, func(s *subSession) bool { return !s.subscribed })
	d.mu.Unlock()
	if all {
		d.subscribedOnce.Do(func() { close(d.subscribed) })
	}
}

// selectShared picks the member of the variant's shared subscription group
// that gets a publish of intent: the members subscribed, sorted by client
// id, in turn by intent (intent 1 to the first, 2 to the second, ...).
// mochi-mqtt itself takes the first member in Go's map order, a different
// one from run to run; the members it chooses among are the same (every
// session with the subscription, connected or not: a message for a member
// whose connection is gone waits in its session).
func selectShared(members map[string]packets.Subscription, intent int) (string, packets.Subscription) {
	ids := make([]string, 0, len(members))
	for id := range members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	id := ids[(max(intent, 1)-1)%len(ids)]
	return id, members[id]
}

// OnSelectSubscribers picks, for a publish of a variant with a shared
// subscription, the group member by intent (selectShared), so that a seed
// gives the same assignment in every run; other shared groups (none of
// dqbench's) as mochi-mqtt would.
func (h *faultHook) OnSelectSubscribers(subs *mochi.Subscribers, pk packets.Packet) *mochi.Subscribers {
	h.mu.Lock()
	st := h.clients[pk.Origin]
	h.mu.Unlock()
	if st == nil || !st.d.shared() {
		return subs
	}
	intent, err := st.d.intentOf(pk.TopicName)
	if err != nil {
		return subs
	}
	subs.SharedSelected = map[string]packets.Subscription{}
	for filter, members := range subs.Shared {
		if len(members) == 0 {
			continue
		}
		var id string
		var sub packets.Subscription
		if filter == st.d.filter {
			id, sub = selectShared(members, intent)
		} else {
			for id, sub = range members {
				break
			}
		}
		if cur, ok := subs.SharedSelected[id]; ok {
			sub = cur.Merge(sub)
		}
		subs.SharedSelected[id] = sub
	}
	return subs
}
