package amqp

import (
	"sync/atomic"

	"github.com/dqbench/dqbench/netfault"
)

// CutOnConfirm is the filter for a producer connection's broker-to-client
// direction: when the broker's basic.ack (or basic.nack) answers a publish
// sequence number in tags whose intent attempt fires says to hit, hit is
// called and the answer is dropped, with everything after it: the broker
// has the publish, the producer never learns it. With reset the
// connection is cut at once; otherwise dark is set, and this filter and
// Dark (on the other direction) drop everything from then on, until the
// caller closes the connection (a partition).
func CutOnConfirm(tags *Tags, fires Fires, hit Lost, reset bool, dark *atomic.Bool) netfault.NewFilter {
	return func() netfault.Filter {
		return &confirmCutter{tags: tags, fires: fires, hit: hit, reset: reset, dark: dark}
	}
}

type confirmCutter struct {
	s     Splitter
	tags  *Tags
	fires Fires
	hit   Lost
	reset bool
	watch bool // drop nothing (WatchConfirms)
	dark  *atomic.Bool
	high  uint64 // the highest sequence number answered so far
}

func (c *confirmCutter) Filter(b []byte) (out []byte, cut bool) {
	c.s.Split(b, func(f []byte) {
		if cut || c.dark.Load() {
			return
		}
		if c.hits(f) && !c.watch {
			if c.reset {
				cut = true
			} else {
				c.dark.Store(true)
			}
			return
		}
		out = append(out, f...)
	})
	return out, cut
}

// hits says whether frame f answers a chosen publish (calling hit for the
// first one it answers).
func (c *confirmCutter) hits(f []byte) bool {
	class, id, args, ok := method(f)
	if !ok || class != classBasic || (id != methodAck && id != methodNack) {
		return false
	}
	tag, multiple, ok := ackArgs(args)
	if !ok {
		return false
	}
	from := tag
	if multiple {
		from = c.high + 1
	}
	c.high = max(c.high, tag)
	for n := from; n <= tag; n++ {
		if e, ok := c.tags.take(n); ok && c.fires(e.Intent, e.Attempt) {
			c.hit(e.Intent, e.Attempt)
			return true
		}
	}
	return false
}

// WatchConfirms is CutOnConfirm that drops nothing: hit is called when the
// broker's answer to a chosen publish passes (the fault then acts on the
// connection another way: a latency toxic).
func WatchConfirms(tags *Tags, fires Fires, hit Lost) netfault.NewFilter {
	return func() netfault.Filter {
		return &confirmCutter{tags: tags, fires: fires, hit: hit, watch: true, dark: new(atomic.Bool)}
	}
}

// Dark is the filter for the other direction of a connection CutOnConfirm
// watches: it drops everything once dark is set.
func Dark(dark *atomic.Bool) netfault.NewFilter {
	return func() netfault.Filter { return darkFilter{dark} }
}

type darkFilter struct{ dark *atomic.Bool }

func (d darkFilter) Filter(b []byte) ([]byte, bool) {
	if d.dark.Load() {
		return nil, false
	}
	return b, false
}
