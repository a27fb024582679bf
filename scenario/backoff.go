package scenario

import (
	"fmt"
	"math"
	"time"
)

// Backoff is the application's wait before each retry (producer.backoff):
// the gap between a send given up on and the next one, against which a
// dedup window or TTL is measured.
type Backoff struct {
	Policy     BackoffPolicy `yaml:"policy" json:"policy,omitempty" jsonschema:"description=fixed (default): every retry waits delay; exponential: the first waits delay\\, each next one multiplier times longer\\, up to max."`
	Delay      Duration      `yaml:"delay" json:"delay" jsonschema:"required,description=The wait before the first retry (with fixed\\, before every retry)\\, e.g. 500ms."`
	Multiplier float64       `yaml:"multiplier" json:"multiplier,omitempty" jsonschema:"minimum=1,maximum=10,description=exponential only: how much longer each wait is than the one before (default 2)."`
	Max        Duration      `yaml:"max" json:"max,omitempty" jsonschema:"description=exponential only: the cap on one wait (default: none)."`
	Jitter     float64       `yaml:"jitter" json:"jitter,omitempty" jsonschema:"minimum=0,maximum=1,description=Fraction of each wait drawn at random: the wait is taken uniformly between (1-jitter) and 1 times its value\\, from a hash of (seed\\, intent\\, attempt)\\, so runs repeat (default 0)."`
}

// BackoffPolicy is how the wait before a retry grows.
type BackoffPolicy string

// Backoff policies.
const (
	FixedBackoff       BackoffPolicy = "fixed"
	ExponentialBackoff BackoffPolicy = "exponential"
)

// Allowed lists the valid values, for strict decoding and the schema.
func (BackoffPolicy) Allowed() []string {
	return []string{string(FixedBackoff), string(ExponentialBackoff)}
}

// maxWait bounds one wait, whatever multiplier and retries say.
const maxWait = 24 * time.Hour

// Wait is how long the application waits before retry n (1: the first
// retry, the intent's second send); u, in [0, 1), draws the jitter. A nil
// Backoff waits nothing.
func (b *Backoff) Wait(n int, u float64) time.Duration {
	if b == nil || n < 1 {
		return 0
	}
	d := float64(b.Delay)
	if b.Policy == ExponentialBackoff {
		m := b.Multiplier
		if m == 0 {
			m = 2
		}
		d *= math.Pow(m, float64(n-1))
		if b.Max > 0 {
			d = math.Min(d, float64(b.Max))
		}
		d = math.Min(d, float64(maxWait))
	}
	d *= 1 - b.Jitter*u
	return time.Duration(d)
}

// backoff checks producer.backoff at path (the producer's path).
func (c *checker) backoff(path string, p *Producer) {
	b := p.Backoff
	if b == nil || !c.d.Has(path+".backoff") {
		return
	}
	bp := path + ".backoff"
	if !c.d.Has(bp + ".delay") {
		c.errorf(bp, "%s: needs delay: the wait before the first retry, e.g. delay: 500ms", bp)
	}
	c.positive(bp+".delay", b.Delay)
	if b.Policy != ExponentialBackoff {
		for _, key := range []string{"multiplier", "max"} {
			if c.d.Has(bp + "." + key) {
				c.errorf(bp+"."+key, "%s.%s: only with policy: exponential (a fixed backoff waits delay before every retry); add policy: exponential or remove it", bp, key)
			}
		}
	}
	if c.d.Has(bp+".multiplier") && (b.Multiplier < 1 || b.Multiplier > 10) {
		c.errorf(bp+".multiplier", "%s.multiplier: must be from 1 to 10, got %v", bp, b.Multiplier)
	}
	c.positive(bp+".max", b.Max)
	if c.d.Has(bp+".max") && b.Max > 0 && b.Max < b.Delay {
		c.errorf(bp+".max", "%s.max: %s is below delay %s; the cap must be at least the first wait", bp, b.Max, b.Delay)
	}
	if c.d.Has(bp+".jitter") && (b.Jitter < 0 || b.Jitter > 1) {
		c.errorf(bp+".jitter", "%s.jitter: must be from 0 to 1 (the fraction of each wait drawn at random), got %v", bp, b.Jitter)
	}
}

// backoffRetries checks that every variant with a backoff has retries to
// space out.
func (c *checker) backoffRetries() {
	for i, v := range c.s.Variants {
		p := c.s.ProducerFor(v)
		if p.Backoff == nil || p.RetryCount() > 0 {
			continue
		}
		path := fmt.Sprintf("variants[%d].producer.backoff", i)
		if !c.d.Has(path) {
			path = "producer.backoff"
		}
		c.errorf(path, "%s: a backoff spaces out retries, and variant %s has none; add retries: N (1 or more)", path, echo(v.Name))
	}
}
