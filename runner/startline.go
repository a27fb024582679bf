package runner

import (
	"context"
	"sync"
)

// startLine holds the variants' producers until every variant of the run
// has armed its faults, or ended before it could: a fault the variants
// share (a managed node's broker-restart waits for every destination that
// armed it to reach the chosen publish) then finds every variant armed,
// however long one took to set up. Without it a variant whose destination
// was declared late on a loaded node could miss a restart the others
// had (faults_injected 0, seen in a comparison run under load).
type startLine struct {
	mu      sync.Mutex
	waiting int
	all     chan struct{} // closed once no variant is still setting up
}

func newStartLine(variants int) *startLine {
	l := &startLine{waiting: variants, all: make(chan struct{})}
	if variants <= 0 {
		close(l.all)
	}
	return l
}

// arrive notes that one variant is ready to produce, or ended.
func (l *startLine) arrive() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.waiting--; l.waiting == 0 {
		close(l.all)
	}
}

// wait waits until every variant has arrived.
func (l *startLine) wait(ctx context.Context) error {
	select {
	case <-l.all:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// atStartLine notes the variant ready to produce and waits for the others
// (once per variant: a variant's second call is a no-op).
func (r *variantRun) atStartLine(ctx context.Context) error {
	if r.line == nil {
		return nil
	}
	r.lineOnce.Do(r.line.arrive)
	return r.line.wait(ctx)
}

// leaveStartLine notes a variant that ended, before or after it got to
// the start line.
func (r *variantRun) leaveStartLine() {
	if r.line != nil {
		r.lineOnce.Do(r.line.arrive)
	}
}
