package scenario

import (
	"fmt"

	"github.com/dqbench/dqbench/catalog"
)

// producerPatterns checks that each producer-app-crash names a point of
// some variant's producer.pattern: otherwise it never fires.
func (c *checker) producerPatterns() {
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
