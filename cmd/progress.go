package cmd

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/clipperhouse/displaywidth"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/dqbench/dqbench/runner"
)

// progressWidth is the most columns the progress display takes, whatever
// the terminal's width.
const progressWidth = 80

// progressDelay: a run shorter than this shows no progress on a terminal
// (a variable for tests).
var progressDelay = 2 * time.Second

// showProgress shows the progress of scenario name's run on stderr until
// done is closed, then returns. On a terminal, after progressDelay: a line
// with the run's elapsed time and faults, then a bar per variant with its
// own counts (published of its total, acked), its rate of acks and an ETA,
// redrawn in place and removed at the end. Not on a terminal: every
// s.PipedProgress (0: never), the same as plain lines, so that a CI log
// shows a long run is alive.
func showProgress(s Streams, name string, p *runner.Progress, done <-chan struct{}) {
	if s.Terminal {
		showBars(s, name, p, done)
		return
	}
	if s.PipedProgress <= 0 {
		return
	}
	start := time.Now()
	t := time.NewTicker(s.PipedProgress)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		var b strings.Builder
		elapsed := time.Since(start)
		b.WriteString(fit(fmt.Sprintf("%s %s · faults %d", name, clock(elapsed), p.Faults.Load()), progressWidth) + "\n")
		for _, v := range p.Variants() {
			b.WriteString(fit("  "+v.Name+": "+variantCounts(v, elapsed, true), progressWidth) + "\n")
		}
		io.WriteString(s.Err, b.String()) // one write: lines from elsewhere do not come between
	}
}

// showBars is showProgress on a terminal: mpb's bars, written to the
// terminal itself (s.term), not through the writer that wraps lines.
func showBars(s Streams, name string, p *runner.Progress, done <-chan struct{}) {
	select {
	case <-done:
		return
	case <-time.After(progressDelay):
	}
	vs := p.Variants()
	if len(vs) == 0 {
		<-done // the run had not begun: nothing to count
		return
	}
	out := s.term
	if out == nil {
		out = s.Err
	}
	width := progressWidth
	if s.ErrWidth > 0 {
		width = min(width, s.ErrWidth)
	}
	width-- // the last column would wrap on some terminals
	start := time.Now().Add(-progressDelay)
	bars := mpb.New(mpb.WithOutput(out), mpb.ForceTTY(), mpb.WithAutoRefresh(), mpb.WithWidth(width), mpb.WithRefreshRate(200*time.Millisecond))
	head := bars.New(1, mpb.NopStyle(), mpb.BarFillerTrim(), mpb.PrependDecorators(decor.Any(func(decor.Statistics) string {
		return fit(fmt.Sprintf("%s %s · faults %d", name, clock(time.Since(start)), p.Faults.Load()), width)
	})))
	nameWidth := 0
	for _, v := range vs {
		nameWidth = max(nameWidth, displaywidth.String(v.Name))
	}
	nameWidth = min(nameWidth, 18)
	all := []*mpb.Bar{head}
	for _, v := range vs {
		label := fit(v.Name, nameWidth+1)
		label += strings.Repeat(" ", nameWidth-displaywidth.String(label))
		// The bar is the variant's acked deliveries against its intents
		// (the run ends when the consumers are done); total+1 so that it
		// never completes, and stops updating, before the run ends.
		bar := bars.New(v.Total+1, mpb.BarStyle().Lbound("[").Filler("=").Tip(">").Padding(" ").Rbound("]"),
			mpb.PrependDecorators(decor.Any(func(decor.Statistics) string { return label + " " })),
			mpb.AppendDecorators(decor.Any(func(decor.Statistics) string {
				return " " + variantCounts(v, time.Since(start), false)
			})))
		all = append(all, bar)
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		for i, v := range vs {
			all[i+1].SetCurrent(min(v.Consumed.Load(), v.Total))
		}
		select {
		case <-done:
			for _, b := range all {
				b.Abort(true) // removed: the report follows
			}
			bars.Wait()
			return
		case <-tick.C:
		}
	}
}

// variantCounts is one variant's progress: "82.1k/200k published, 80.0k
// acked, 9.1k/s, ETA 0:13", or, short (for a bar), "82.1k/200k pub 80.0k
// ack 9.1k/s ETA 0:13". Rate and ETA are of the acked deliveries, which
// end the run, averaged since its start.
func variantCounts(v *runner.VariantProgress, elapsed time.Duration, long bool) string {
	pub, acked := v.Published.Load(), v.Consumed.Load()
	rate := 0.0
	if elapsed > 0 {
		rate = float64(acked) / elapsed.Seconds()
	}
	eta := "--"
	switch left := v.Total - acked; {
	case left <= 0:
		eta = "0:00"
	case rate > 0:
		eta = clock(time.Duration(float64(left) / rate * float64(time.Second)))
	}
	if long {
		return fmt.Sprintf("%s/%s published, %s acked, %s/s, ETA %s", compact(pub), compact(v.Total), compact(acked), compact(int64(rate)), eta)
	}
	return fmt.Sprintf("%s/%s pub %s ack %s/s ETA %s", compact(pub), compact(v.Total), compact(acked), compact(int64(rate)), eta)
}

// compact writes n in at most five characters: 9999, 12.3k, 200k, 1.5M.
func compact(n int64) string {
	f := float64(n)
	switch {
	case n < 10000:
		return fmt.Sprint(n)
	case n < 100000:
		return trimZero(fmt.Sprintf("%.1f", f/1e3)) + "k"
	case n < 1000000:
		return fmt.Sprintf("%.0fk", f/1e3)
	case n < 100000000:
		return trimZero(fmt.Sprintf("%.1f", f/1e6)) + "M"
	}
	return fmt.Sprintf("%.0fM", f/1e6)
}

func trimZero(s string) string { return strings.TrimSuffix(s, ".0") }

// clock writes d as m:ss, or h:mm:ss from an hour.
func clock(d time.Duration) string {
	d = d.Round(time.Second)
	h, m, sec := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	if h > 0 {
		return fmt.Sprintf("%d:%02d:%02d", h, m, sec)
	}
	return fmt.Sprintf("%d:%02d", m, sec)
}

// fit cuts l to fewer than width columns (0: whole).
func fit(l string, width int) string {
	if width > 1 && displaywidth.String(l) >= width {
		return displaywidth.TruncateString(l, width-1, "…")
	}
	return l
}
