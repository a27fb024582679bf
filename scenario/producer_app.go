package scenario

import (
	"fmt"

	"github.com/dqbench/dqbench/catalog"
)

// relayIgnores are the producer keys the outbox relay does not use: it
// publishes one row at a time and publishes a row again, on its next
// pass, until the broker confirms it.
var relayIgnores = []string{"retries", "confirm_timeout", "backoff", "window"}

// producerPatterns checks that each producer-app-crash names a point of
// some variant's producer.pattern (otherwise it never fires), and that no
// variant sets a publish policy its outbox relay would ignore.
func (c *checker) producerPatterns() {
	for i, v := range c.s.Variants {
		if c.s.ProducerFor(v).Pattern != catalog.Outbox {
			continue
		}
		for _, key := range relayIgnores {
			path := fmt.Sprintf("variants[%d].producer.%s", i, key)
			if !c.d.Has(path) && (c.s.Producer.Pattern != catalog.Outbox || !c.d.Has("producer."+key)) {
				continue
			}
			if !c.d.Has(path) {
				path = "producer." + key
			}
			c.errorf(path, "%s: the outbox relay (producer.pattern outbox) does not use it: it publishes one row at a time and publishes a row again on its next pass until the broker confirms it; remove %s, or set it only where the pattern is direct or dual-write", path, key)
		}
	}
	for i, f := range c.s.Faults {
		p, ok := f.Params.(*catalog.ProducerAppCrashParams)
		if !ok || catalog.PatternWith(p.At) == "" {
			continue
		}
		found := false
		for _, v := range c.s.Variants {
			found = found || c.s.ProducerFor(v).Pattern.Point() == p.At
		}
		if found {
			continue
		}
		want := catalog.PatternWith(p.At)
		path := fmt.Sprintf("faults[%d].at", i)
		c.errorf(path, "%s: no variant's producer.pattern is %s, the only pattern with the point %s, so the fault never fires; add producer: {pattern: %s} to a variant, or pick another point",
			path, want, p.At, want)
	}
}
