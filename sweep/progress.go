package sweep

import (
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/clipperhouse/displaywidth"
)

// Progress counts a sweep's runs as they finish, for a progress line.
type Progress struct {
	total, finished, failing atomic.Int64
	start                    atomic.Pointer[time.Time]
}

func (p *Progress) begin(total int) {
	now := time.Now()
	p.start.Store(&now)
	p.total.Store(int64(total))
}

func (p *Progress) done(failing bool) {
	p.finished.Add(1)
	if failing {
		p.failing.Add(1)
	}
}

// Line is "sweep quickstart: 37/200 runs · 12.1 runs/s · ETA 13s · 2
// failing".
func (p *Progress) Line(name string) string {
	total, done, failing := p.total.Load(), p.finished.Load(), p.failing.Load()
	l := fmt.Sprintf("sweep %s: %d/%d runs", name, done, total)
	if start := p.start.Load(); start != nil && done > 0 {
		elapsed := time.Since(*start)
		rate := float64(done) / elapsed.Seconds()
		eta := time.Duration(float64(total-done) / rate * float64(time.Second))
		l += fmt.Sprintf(" · %.1f runs/s · ETA %s", rate, eta.Round(time.Second))
	}
	return l + fmt.Sprintf(" · %d failing", failing)
}

// Show writes the progress line until done is closed: on a terminal
// (width columns, 0 for unknown) redrawn in place a few times a second
// and cleared at the end, otherwise a plain line every 10 seconds, which
// a CI log keeps.
func Show(w io.Writer, terminal bool, width int, name string, p *Progress, done <-chan struct{}) {
	every := 10 * time.Second
	if terminal {
		every = 200 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-done:
			if terminal {
				fmt.Fprint(w, "\r\033[K")
			}
			return
		case <-t.C:
		}
		l := p.Line(name)
		if !terminal {
			fmt.Fprintln(w, l)
			continue
		}
		if width > 1 {
			l = displaywidth.TruncateString(l, width-1, "…")
		}
		fmt.Fprint(w, "\r\033[K"+l)
	}
}
