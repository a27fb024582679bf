package cmd

import (
	"io"

	"github.com/dqbench/dqbench/catalog"
)

// maskWriter hides the password of every URL written through it
// (catalog.MaskURLs): the last line of defence behind the masking each
// message does, so that no report format and no error path can print a
// password given in a flag or a scenario, also in a URL that does not parse.
// dqbench writes whole lines or whole documents, so a URL is never split
// across two writes.
type maskWriter struct{ w io.Writer }

func (m maskWriter) Write(p []byte) (int, error) {
	masked := catalog.MaskURLs(string(p))
	if len(masked) == len(p) && masked == string(p) {
		_, err := m.w.Write(p)
		return len(p), err
	}
	if _, err := io.WriteString(m.w, masked); err != nil {
		return 0, err
	}
	return len(p), nil
}

// masked wraps w in a maskWriter (nil stays nil).
func masked(w io.Writer) io.Writer {
	if w == nil {
		return nil
	}
	if _, ok := w.(maskWriter); ok {
		return w
	}
	return maskWriter{w}
}
