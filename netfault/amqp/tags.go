package amqp

import "sync"

// Tags is the small table an adapter shares with its filters: which intent,
// and which attempt of it, a delivery tag (consumer side) or a publish
// sequence number (producer side) carries. The adapter puts an entry just
// before it writes the frame the tag belongs to (basic.ack; basic.publish);
// the filter takes it out when it sees the frame (the consumer's
// basic.ack; the broker's confirm). A table covers one channel: dqbench's
// clients use one channel per connection.
type Tags struct {
	mu sync.Mutex
	m  map[uint64]Tagged
}

// Tagged is what a tag carries.
type Tagged struct {
	Intent, Attempt int
}

// Put notes that tag carries attempt of intent.
func (t *Tags) Put(tag uint64, intent, attempt int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[uint64]Tagged{}
	}
	t.m[tag] = Tagged{Intent: intent, Attempt: attempt}
}

// take returns and forgets what tag carries.
func (t *Tags) take(tag uint64) (Tagged, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.m[tag]
	delete(t.m, tag)
	return e, ok
}
