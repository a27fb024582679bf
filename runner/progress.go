package runner

import (
	"sync/atomic"
	"time"

	"github.com/dqbench/dqbench/scenario"
)

// Progress counts a run's work as it happens, for a progress display: over
// all variants, and per variant (Variants).
type Progress struct {
	Total     atomic.Int64 // intents to publish, over all variants
	Published atomic.Int64 // publishes confirmed or failed
	Consumed  atomic.Int64 // deliveries acked
	Faults    atomic.Int64 // faults injected
	// variants are each variant's counts, once the run has begun.
	variants atomic.Pointer[[]*VariantProgress]
	// heard is when the broker last answered (a confirm, a delivery, an
	// ack), in nanoseconds since the run's start.
	heard atomic.Int64
	// lastFault is the fault injected last, and when.
	lastFault atomic.Pointer[firedFault]
}

// firedFault is a fault injection: the fault's name and when, since the
// run's start.
type firedFault struct {
	name string
	at   time.Duration
}

// fired notes that fault name was injected.
func (p *Progress) fired(start time.Time, name string) {
	p.Faults.Add(1)
	p.lastFault.Store(&firedFault{name: name, at: time.Since(start)})
}

// heardFrom notes that the broker answered.
func (p *Progress) heardFrom(start time.Time) { p.heard.Store(int64(time.Since(start))) }

// VariantProgress counts one variant's work as it happens.
type VariantProgress struct {
	Name      string
	Total     int64        // intents to publish
	Published atomic.Int64 // publishes confirmed or failed
	Consumed  atomic.Int64 // deliveries acked
}

// Begin sets the totals of s's run, and its variants' counts (Run calls
// it once the broker and stores are open).
func (p *Progress) Begin(s *scenario.Scenario) {
	p.Total.Store(int64(s.Messages * len(s.Variants)))
	vs := make([]*VariantProgress, len(s.Variants))
	for i, v := range s.Variants {
		vs[i] = &VariantProgress{Name: v.Name, Total: int64(s.Messages)}
	}
	p.variants.Store(&vs)
}

// Variants returns each variant's counts, in the scenario's order: nil
// until the run has begun (its broker and stores open).
func (p *Progress) Variants() []*VariantProgress {
	if vs := p.variants.Load(); vs != nil {
		return *vs
	}
	return nil
}

// variant is variant i's counts (nil before the run begins).
func (p *Progress) variant(i int) *VariantProgress {
	if vs := p.Variants(); i < len(vs) {
		return vs[i]
	}
	return nil
}

// published counts a publish that ended (confirmed or failed) of the
// variant v (nil: only in the run's total).
func (p *Progress) published(v *VariantProgress) {
	p.Published.Add(1)
	if v != nil {
		v.Published.Add(1)
	}
}

// consumed counts n deliveries of variant v acked.
func (p *Progress) consumed(v *VariantProgress, n int) {
	p.Consumed.Add(int64(n))
	if v != nil {
		v.Consumed.Add(int64(n))
	}
}
