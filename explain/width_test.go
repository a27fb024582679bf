package explain_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dqbench/dqbench/explain"
	"github.com/dqbench/dqbench/internal/ansi"
)

// TestFitsTerminal: on a terminal (Width set) no line of explain's list or
// of an intent's story is wider than it, in colour or not; a command that
// does not fit goes on lines of its own joined by " \", which a shell reads
// as the one command.
func TestFitsTerminal(t *testing.T) {
	r := load(t)
	for _, width := range []int{50, 80, 100} {
		for _, color := range []bool{false, true} {
			var buf bytes.Buffer
			for _, o := range []explain.Options{{}, {Intent: 8}, {Intent: 35}, {Variant: "dedup-table-split", Intent: 75}} {
				o.Width, o.Color = width, color
				if err := explain.Write(&buf, r, o); err != nil {
					t.Fatal(err)
				}
			}
			out := buf.String()
			for _, l := range strings.Split(out, "\n") {
				if w := ansi.Width(l); w > width {
					t.Errorf("at %d columns (colour %v) a line is %d wide:\n%s", width, color, w, l)
				}
			}
			joined := strings.ReplaceAll(out, " \\\n      ", " ")
			if !strings.Contains(joined, "dqbench explain testdata/quickstart --variant dedup-table-split --intent 35\n") {
				t.Errorf("at %d columns the story command does not read as one:\n%s", width, out)
			}
		}
	}
}
