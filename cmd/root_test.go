package cmd

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// panicWriter panics on every write: a stand-in for a bug anywhere in a
// command.
type panicWriter struct{}

func (panicWriter) Write([]byte) (int, error) { panic("boom") }

func TestExecutePanic(t *testing.T) {
	var errOut bytes.Buffer
	code := Execute(context.Background(), []string{"schema"}, Streams{In: strings.NewReader(""), Out: panicWriter{}, Err: &errOut})
	if code != ExitInternal {
		t.Errorf("exit code %d, want %d", code, ExitInternal)
	}
	got := errOut.String()
	want := "dqbench: internal error: boom; please report this at https://github.com/dqbench/dqbench/issues with the scenario file\n"
	if !strings.HasPrefix(got, want) {
		t.Errorf("stderr starts %.200q\nwant %q", got, want)
	}
	if !strings.Contains(got, "panicWriter.Write") {
		t.Errorf("stderr has no stack naming the panic:\n%s", got)
	}
}
