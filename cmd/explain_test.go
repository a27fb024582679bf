package cmd

import (
	"bytes"
	"strings"
	"testing"
)

// runStreams is run with the terminal given by s (Width, NoColor).
func runStreams(t *testing.T, s Streams, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	s.In, s.Out, s.Err = strings.NewReader(""), &out, &errOut
	fake := &fakeRunner{}
	code := execute(t.Context(), args, s, fake.run)
	return result{code: code, out: out.String(), err: errOut.String(), fake: fake}
}

// TestExplain: the command reads a saved run, colours only on a terminal
// without NO_COLOR, and a bad --variant is a usage error.
func TestExplain(t *testing.T) {
	const saved = "../explain/testdata/quickstart"
	for _, tc := range []struct {
		name   string
		s      Streams
		colour bool
	}{
		{"piped", Streams{}, false},
		{"terminal", Streams{Width: 120}, true},
		{"terminal with NO_COLOR", Streams{Width: 120, NoColor: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runStreams(t, tc.s, "explain", saved, "--variant", "none", "--intent", "8")
			if r.code != ExitPass {
				t.Fatalf("exit %d: %s", r.code, r.err)
			}
			if !strings.Contains(r.out, "duplicate") {
				t.Errorf("no verdict in:\n%s", r.out)
			}
			if got := strings.Contains(r.out, "\033["); got != tc.colour {
				t.Errorf("colour: %v, want %v", got, tc.colour)
			}
		})
	}
	r := runStreams(t, Streams{}, "explain", saved, "--variant", "nope")
	if r.code != ExitUsage || !strings.Contains(r.err, `no variant "nope"`) {
		t.Errorf("bad variant: exit %d, stderr %q", r.code, r.err)
	}
	r = runStreams(t, Streams{}, "explain", t.TempDir())
	if r.code != ExitUsage || !strings.Contains(r.err, "holds no saved run") {
		t.Errorf("empty dir: exit %d, stderr %q", r.code, r.err)
	}
}
