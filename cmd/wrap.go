package cmd

import (
	"io"
	"strings"

	"github.com/dqbench/dqbench/internal/ansi"
)

// wrapWriter wraps each whole line written through it at spaces to fit a
// terminal of width columns, the rest of a line indented: what dqbench
// writes to stderr (errors, warnings, notices) fits the terminal however
// long a path, a URL or a list it names. dqbench writes whole lines in one
// write; what follows a write's last newline (a progress line redrawn with
// "\r") is written as it is.
type wrapWriter struct {
	w     io.Writer
	width int
}

// wrapping wraps w to width columns; width 0 (not a terminal) keeps w.
func wrapping(w io.Writer, width int) io.Writer {
	if w == nil || width <= 0 {
		return w
	}
	return wrapWriter{w: w, width: width}
}

func (w wrapWriter) Write(p []byte) (int, error) {
	s := string(p)
	end := strings.LastIndexByte(s, '\n')
	if end < 0 {
		return w.w.Write(p)
	}
	var b strings.Builder
	for _, l := range strings.Split(s[:end], "\n") {
		for _, part := range ansi.Wrap(l, w.width, "    ") {
			b.WriteString(part)
			b.WriteByte('\n')
		}
	}
	b.WriteString(s[end+1:])
	if _, err := io.WriteString(w.w, b.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}
