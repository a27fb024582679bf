package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dqbench/dqbench/internal/ansi"
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

// TestMalformedHistory: a saved run whose history holds a line no run
// writes is bad input to check and to explain alike: exit 2 naming the line.
func TestMalformedHistory(t *testing.T) {
	for _, tc := range []struct{ name, line, want string }{
		{"not JSON", "{oops", "history.jsonl: malformed history: line "},
		{"intent past the run's", `{"variant":"none","type":"publish","intent":999999}`, "publish of intent 999999, but the run published intents 1.."},
		{"attempt -1", `{"variant":"none","type":"deliver","intent":3,"attempt":-1}`, "deliver event with attempt -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS("../explain/testdata/quickstart")); err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(filepath.Join(dir, "history.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString(tc.line + "\n"); err != nil {
				t.Fatal(err)
			}
			f.Close()
			for _, args := range [][]string{{"check", dir}, {"explain", dir}, {"explain", dir, "--variant", "none", "--intent", "3"}} {
				r := runStreams(t, Streams{}, args...)
				if r.code != ExitUsage || !strings.Contains(r.err, tc.want) {
					t.Errorf("%v: exit %d, stderr %q; want %d and %q", args, r.code, r.err, ExitUsage, tc.want)
				}
			}
		})
	}
}

// TestExplainFitsTerminal: explain wraps to the terminal's width.
func TestExplainFitsTerminal(t *testing.T) {
	for _, width := range []int{80, 100} {
		for _, args := range [][]string{{}, {"--variant", "dedup-table-split", "--intent", "35"}} {
			r := runStreams(t, Streams{Width: width}, append([]string{"explain", "../explain/testdata/quickstart"}, args...)...)
			if r.code != ExitPass {
				t.Fatalf("exit %d: %s", r.code, r.err)
			}
			for _, l := range strings.Split(r.out, "\n") {
				if w := ansi.Width(l); w > width {
					t.Errorf("explain %v at %d columns: a line is %d wide:\n%s", args, width, w, l)
				}
			}
		}
	}
}
