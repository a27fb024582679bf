package mqtt

import (
	"context"
	"errors"
	"slices"
	"time"

	mochi "github.com/mochi-mqtt/server/v2"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/catalog"
)

// The subscriber-offline fault on the embedded broker. Its window is
// decided in the publisher's read loop (OnPublish, before the broker
// routes a publish), so it is counted in intents, not in time:
//
//   - before the chosen intent is routed, the broker waits (bounded) until
//     the subscriber has nothing of this variant's on its way or unacked,
//     then closes the subscriber's connection, as a crashed or unplugged
//     client's would close: no DISCONNECT, no UNSUBSCRIBE;
//   - while that intent and the next window-1 are routed, the broker
//     refuses the subscriber's CONNECT (the client keeps retrying);
//   - after the last one, the next publish waits (bounded) until the
//     subscriber is connected and subscribed again, so what the window
//     loses is the window's and nothing after it.
//
// A window also ends when no publish has come for offlineIdle (the run
// has no more intents). With a minimum (at_least), it ends no sooner than
// that after it began, publishes routed until then held too; a session
// whose expiry passes meanwhile is ended by the broker (OnClientExpired),
// which the window's event says.

// offline is an armed subscriber-offline fault of one destination; its
// fields are guarded by the destState's mu.
type offline struct {
	window  int
	atLeast time.Duration
	fires   func(intent, attempt int) bool
	ended   func(start int, held []int, away time.Duration, expired bool)
	seen    map[int]int // intent → publishes of it seen

	phase offlinePhase
	start int   // the window's first intent
	held  []int // intents routed while offline
	gen   int   // counts windows, so a stale idle timer does nothing
	idle  *time.Timer
	began time.Time // when the subscriber went offline
	// expired: the broker ended the subscriber's session during the
	// window (its session expiry passed).
	expired bool
}

type offlinePhase int

const (
	online    offlinePhase = iota
	away                   // the subscriber is offline
	returning              // the window is over; the subscriber may not be back yet
)

const (
	offlineIdle   = time.Second     // a window ends when no publish comes for this long
	offlineSettle = 2 * time.Second // bounds each wait for the subscriber
)

var errOffline = errors.New("dqbench: subscriber taken offline by fault")

// takeOffline arms subscriber-offline.
func (d embeddedDest) takeOffline(p brokers.TakeOffline) bool {
	d.state.mu.Lock()
	defer d.state.mu.Unlock()
	d.state.offline = &offline{window: p.Window, atLeast: p.AtLeast, fires: p.Fires, ended: p.Ended, seen: map[int]int{}}
	return true
}

// beforeRoute runs in the publisher's read loop before intent's publish
// is routed: it waits for a returning subscriber, and starts a window
// where the fault fires.
func (h *faultHook) beforeRoute(st *destState, intent int) {
	st.mu.Lock()
	o := st.offline
	if o == nil {
		st.mu.Unlock()
		return
	}
	phase := o.phase
	st.mu.Unlock()
	if phase == returning {
		h.awaitSubscriber(st)
		st.mu.Lock()
		if o.phase == returning {
			o.phase = online
		}
		st.mu.Unlock()
	}
	st.mu.Lock()
	if o.phase != online {
		st.mu.Unlock()
		return
	}
	o.seen[intent]++
	fire := o.fires(intent, o.seen[intent])
	st.mu.Unlock()
	if !fire {
		return
	}
	// Let the subscriber finish what it was sent, so that the window
	// alone decides what is lost.
	for deadline := time.Now().Add(offlineSettle); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if n, err := h.embedded.backlog(context.Background(), st.d); err == nil && n-1+st.d.qos0Backlog() <= 0 { // -1: this publish, gated
			break
		}
	}
	st.mu.Lock()
	o.phase, o.start, o.held = away, intent, nil
	o.began, o.expired = time.Now(), false
	o.gen++
	gen := o.gen
	o.idle = time.AfterFunc(offlineIdle, func() { h.endOffline(st, gen) })
	st.mu.Unlock()
	if cl, ok := h.embedded.srv.Clients.Get(st.d.subID); ok {
		cl.Stop(errOffline)
	}
}

// afterRoute runs once intent's publish is routed: an intent routed while
// the subscriber is away is held, and the window's last one ends it.
func (h *faultHook) afterRoute(st *destState, intent int) {
	st.mu.Lock()
	o := st.offline
	if o == nil || o.phase != away {
		st.mu.Unlock()
		return
	}
	if !slices.Contains(o.held, intent) {
		o.held = append(o.held, intent)
	}
	gen := o.gen
	last := intent >= o.start+o.window-1
	if !last {
		o.idle.Reset(offlineIdle)
	}
	st.mu.Unlock()
	if last {
		h.endOffline(st, gen)
	}
}

// endOffline ends window gen, once, and records it; a window with a
// minimum not yet reached ends when it is.
func (h *faultHook) endOffline(st *destState, gen int) {
	st.mu.Lock()
	o := st.offline
	if o.phase != away || o.gen != gen {
		st.mu.Unlock()
		return
	}
	if left := o.atLeast - time.Since(o.began); left > 0 {
		o.idle.Reset(left)
		st.mu.Unlock()
		return
	}
	o.phase = returning
	o.idle.Stop()
	start, held, away, expired := o.start, slices.Clone(o.held), time.Since(o.began), o.expired
	st.mu.Unlock()
	o.ended(start, held, away, expired)
}

// OnClientExpired: the broker ends a session whose client stayed away
// past its session expiry; a subscriber-offline window notes it.
func (h *faultHook) OnClientExpired(cl *mochi.Client) {
	st, leg := h.state(cl)
	if st == nil || leg != catalog.SubscriberLeg {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if o := st.offline; o != nil && o.phase == away {
		o.expired = true
	}
}

// refuses reports whether the broker refuses cl's CONNECT: the subscriber
// of a destination whose subscriber is away.
func (h *faultHook) refuses(cl *mochi.Client) bool {
	st, leg := h.state(cl)
	if st == nil || leg != catalog.SubscriberLeg {
		return false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.offline != nil && st.offline.phase == away
}

// awaitSubscriber waits (bounded) until the subscriber is connected and
// has its subscription.
func (h *faultHook) awaitSubscriber(st *destState) {
	for deadline := time.Now().Add(offlineSettle); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		cl, ok := h.embedded.srv.Clients.Get(st.d.subID)
		if ok && !cl.Closed() && cl.State.Subscriptions.Len() > 0 {
			return
		}
	}
}
