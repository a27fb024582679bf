package report_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/internal/ansi"
	"github.com/dqbench/dqbench/report"
	"github.com/dqbench/dqbench/scenarios"
)

var builtinRuns = flag.String("builtins", "", "with -update: rebuild testdata/builtins.json from the result.json of the runs saved in this --out directory")

// builtinsFile holds one judged run of every built-in, as "dqbench run
// NAME --out DIR" saved it in DIR/NAME/result.json. To refresh it:
//
//	for n in $(go run . list | cut -d" " -f1); do go run . run $n --out /tmp/runs --force >/dev/null; done
//	go test ./report -run TestBuiltinsFit -update -builtins /tmp/runs
const builtinsFile = "testdata/builtins.json"

func builtinJudgements(t *testing.T) []check.Run {
	t.Helper()
	if *update && *builtinRuns != "" {
		var all []check.Run
		for _, name := range scenarios.Names() {
			b, err := os.ReadFile(filepath.Join(*builtinRuns, name, "result.json"))
			if err != nil {
				t.Fatalf("%v (save every built-in's run there first)", err)
			}
			var r check.Run
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			all = append(all, r)
		}
		b, err := json.MarshalIndent(all, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(builtinsFile, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(builtinsFile)
	if err != nil {
		t.Fatal(err)
	}
	var all []check.Run
	if err := json.Unmarshal(b, &all); err != nil {
		t.Fatal(err)
	}
	var have []string
	for _, r := range all {
		have = append(have, r.Scenario)
	}
	for _, name := range scenarios.Names() {
		if !slices.Contains(have, name) {
			t.Errorf("%s has no run of built-in %s; refresh it (see builtinsFile)", builtinsFile, name)
		}
	}
	return all
}

// TestBuiltinsFit: on an 80- and a 100-column terminal, no line of any
// built-in's report is wider than the terminal, in colour or not, and
// --quiet's line neither; piped (width 0) the table has every column.
func TestBuiltinsFit(t *testing.T) {
	for _, r := range builtinJudgements(t) {
		for _, width := range []int{80, 100} {
			for _, color := range []bool{false, true} {
				var buf bytes.Buffer
				opts := report.Options{Width: width, Color: color}
				if err := report.Table(&buf, []check.Run{r}, opts); err != nil {
					t.Fatal(err)
				}
				if err := report.Verdicts(&buf, []check.Run{r}, opts); err != nil {
					t.Fatal(err)
				}
				for _, l := range strings.Split(buf.String(), "\n") {
					if w := ansi.Width(l); w > width {
						t.Errorf("%s at %d columns (colour %v): a line is %d wide:\n%s", r.Scenario, width, color, w, l)
					}
				}
			}
		}
		var piped bytes.Buffer
		if err := report.Table(&piped, []check.Run{r}, report.Options{}); err != nil {
			t.Fatal(err)
		}
		for _, c := range check.Table {
			if !strings.Contains(piped.String(), c.Column) {
				t.Errorf("%s piped: no %s column", r.Scenario, c.Column)
			}
		}
	}
}

// TestBuiltinsWidths prints how wide each built-in's report is at 80 and
// 100 columns (go test -v -run TestBuiltinsWidths).
func TestBuiltinsWidths(t *testing.T) {
	for _, r := range builtinJudgements(t) {
		var line []string
		for _, width := range []int{0, 80, 100} {
			var buf bytes.Buffer
			if err := report.Table(&buf, []check.Run{r}, report.Options{Width: width}); err != nil {
				t.Fatal(err)
			}
			line = append(line, fmt.Sprintf("%d→%d", width, ansi.Width(buf.String())))
		}
		t.Logf("%-30s %s", r.Scenario, strings.Join(line, "  "))
	}
}

// TestREADME holds the README to the table: its sentence listing what a
// piped table prints names every column, in order, and its 80-column
// quickstart example is what Table prints for the saved quickstart run at
// 80 columns, down to the line saying what it hid.
func TestREADME(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := strings.Join(strings.Fields(string(b)), " ")
	var names []string
	for _, c := range check.Table {
		names = append(names, c.Column)
	}
	if want := "Piped (or with `--wide`) it prints every count: " + strings.Join(names, ", ") + "."; !strings.Contains(readme, want) {
		t.Errorf("README.md does not say %q", want)
	}

	raw := string(b)
	start := strings.Index(raw, "\nscenario quickstart\n")
	if start < 0 {
		t.Fatal("README.md has no quickstart example")
	}
	example := raw[start+1:]
	for _, r := range builtinJudgements(t) {
		if r.Scenario != "quickstart" {
			continue
		}
		var buf bytes.Buffer
		if err := report.Table(&buf, []check.Run{r}, report.Options{Width: 80}); err != nil {
			t.Fatal(err)
		}
		got := buf.String()
		table := got[:strings.Index(got, "\nPASS ")+1]
		if !strings.HasPrefix(example, table) {
			t.Errorf("README.md's quickstart example does not begin as the table prints at 80 columns:\n%s", table)
		}
	}
}
