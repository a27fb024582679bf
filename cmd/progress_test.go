package cmd

import (
	"bytes"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dqbench/dqbench/internal/ansi"
	"github.com/dqbench/dqbench/runner"
	"github.com/dqbench/dqbench/scenario"
)

// syncBuffer is a bytes.Buffer that the progress goroutines may write
// while a test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// progressFor is a run's progress of two variants of 200000 intents each,
// part way: each variant its own counts.
func progressFor(t *testing.T) *runner.Progress {
	t.Helper()
	s, err := scenario.Parse("p.yaml", []byte(`version: 1
name: p
messages: 200000
broker: {kind: kafka}
variants:
  - {name: none, strategy: none}
  - {name: a-rather-long-variant-name-here, strategy: dedup-table}
`))
	if err != nil {
		t.Fatal(err)
	}
	p := &runner.Progress{}
	p.Begin(s)
	vs := p.Variants()
	vs[0].Published.Store(123456)
	vs[0].Consumed.Store(100000)
	vs[1].Published.Store(2000)
	vs[1].Consumed.Store(1500)
	p.Faults.Store(99999)
	return p
}

// csi is a terminal control sequence (cursor moves, colours, erase).
var csi = regexp.MustCompile("\x1b\\[[0-9;?]*[A-Za-z]")

// TestProgressBars: on a terminal, a bar per variant with its own counts
// (not the sum), the rate and ETA, within 80 columns (or the terminal's
// width when narrower), removed when the run ends.
func TestProgressBars(t *testing.T) {
	defer func(d time.Duration) { progressDelay = d }(progressDelay)
	progressDelay = 0
	for _, width := range []int{200, 80, 50} {
		var out syncBuffer
		s := Streams{Err: &out, Terminal: true, ErrWidth: width}
		done := make(chan struct{})
		shown := make(chan struct{})
		go func() { showProgress(s, "quickstart", progressFor(t), done); close(shown) }()
		time.Sleep(700 * time.Millisecond)
		close(done)
		<-shown
		frames := out.String()
		lines := strings.Split(csi.ReplaceAllString(frames, ""), "\n")
		limit := min(width, 80) - 1
		for _, l := range lines {
			if w := ansi.Width(l); w > limit {
				t.Errorf("at %d columns, a line of %d: %q", width, w, l)
			}
		}
		text := strings.Join(lines, "\n")
		for _, want := range []string{"quickstart 0:0", "faults 99999", "none", "123k/200k pub 100k ack", "2000/200k pub 1500 ack", "/s ETA "} {
			if width >= 80 && !strings.Contains(text, want) {
				t.Errorf("at %d columns, the bars do not show %q:\n%s", width, want, text)
			}
		}
		if strings.Contains(text, "125456") || strings.Contains(text, "125.5k") {
			t.Errorf("the variants' counts are summed:\n%s", text)
		}
		if !strings.HasSuffix(frames, "\x1b[J") {
			t.Errorf("at %d columns, the bars are not erased at the end: %q", width, frames[max(0, len(frames)-80):])
		}
	}
}

// TestProgressPiped: not on a terminal, a plain line per variant every
// PipedProgress, within 80 columns, no control sequence; none when it is 0.
func TestProgressPiped(t *testing.T) {
	var out syncBuffer
	s := Streams{Err: &out, PipedProgress: 100 * time.Millisecond}
	done := make(chan struct{})
	shown := make(chan struct{})
	go func() { showProgress(s, "quickstart", progressFor(t), done); close(shown) }()
	time.Sleep(350 * time.Millisecond)
	close(done)
	<-shown
	text := out.String()
	if strings.Contains(text, "\x1b") || strings.Contains(text, "\r") {
		t.Errorf("control characters in piped progress: %q", text)
	}
	if n := strings.Count(text, "quickstart 0:00 · faults 99999\n"); n < 2 || n > 4 {
		t.Errorf("%d progress lines in 350 ms at one per 100 ms:\n%s", n, text)
	}
	for _, want := range []string{"  none: 123k/200k published, 100k acked, ", "/s, ETA ", "  a-rather-long-variant-name-here: 2000/200k published, 1500 acked"} {
		if !strings.Contains(text, want) {
			t.Errorf("piped progress does not say %q:\n%s", want, text)
		}
	}
	for _, l := range strings.Split(text, "\n") {
		if ansi.Width(l) >= 80 {
			t.Errorf("a line of %d columns: %q", ansi.Width(l), l)
		}
	}

	var none syncBuffer
	done = make(chan struct{})
	time.AfterFunc(250*time.Millisecond, func() { close(done) })
	showProgress(Streams{Err: &none}, "quickstart", progressFor(t), done)
	if none.String() != "" {
		t.Errorf("PipedProgress 0 wrote %q", none.String())
	}
}

func TestCompact(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 9999: "9999", 12345: "12.3k", 20000: "20k", 123456: "123k", 1500000: "1.5M", 300000000: "300M"} {
		if got := compact(n); got != want {
			t.Errorf("compact(%d) = %q, want %q", n, got, want)
		}
	}
}
