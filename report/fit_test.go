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
// --quiet's line neither; piped (width 0) the table fits PipedWidth (80)
// columns as on an 80-column terminal, and with Wide it has every column.
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
		var piped, term bytes.Buffer
		if err := report.Table(&piped, []check.Run{r}, report.Options{}); err != nil {
			t.Fatal(err)
		}
		if err := report.Table(&term, []check.Run{r}, report.Options{Width: report.PipedWidth}); err != nil {
			t.Fatal(err)
		}
		if pipedTable, termTable := tableOf(piped.String()), tableOf(term.String()); pipedTable != termTable {
			t.Errorf("%s piped: the table is not the one of an 80-column terminal:\n%s\nwant:\n%s", r.Scenario, pipedTable, termTable)
		}
		for _, l := range strings.Split(tableOf(piped.String()), "\n") {
			if w := ansi.Width(l); w > report.PipedWidth {
				t.Errorf("%s piped: a table line is %d wide:\n%s", r.Scenario, w, l)
			}
		}
		var wide bytes.Buffer
		if err := report.Table(&wide, []check.Run{r}, report.Options{Wide: true}); err != nil {
			t.Fatal(err)
		}
		for _, c := range check.Table {
			if !strings.Contains(wide.String(), c.Column) {
				t.Errorf("%s piped --wide: no %s column", r.Scenario, c.Column)
			}
		}
	}
}

// tableOf is the table of a report: its box-drawing lines, without the
// lines under it (which wrap only on a terminal).
func tableOf(report string) string {
	var table []string
	for _, l := range strings.Split(report, "\n") {
		if strings.ContainsAny(l, "┌│├└") {
			table = append(table, l)
		}
	}
	return strings.Join(table, "\n")
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

// TestREADME holds the README to the count table: its sentence listing
// what a table with --wide prints names every column in order, its list of the
// counts every name, and its 80-column quickstart example is what Table
// prints for the saved quickstart run at 80 columns, down to the line
// saying what it hid. With -update it rewrites the three (go test ./report
// -update, after adding a count).
func TestREADME(t *testing.T) {
	const path = "../README.md"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	raw := string(b)
	var columns []string
	for _, c := range check.Table {
		columns = append(columns, c.Column)
	}
	lists := []struct{ prefix, list, end string }{
		{"With `--wide` it prints every count: ", strings.Join(columns, ", "), "."},
		{"- **Counts** per variant: `", strings.Join(check.CountNames(), ", "), "`."},
	}
	for _, l := range lists {
		if *update {
			raw = rewrap(t, raw, l.prefix, l.list+l.end, l.end)
		}
		if want := l.prefix + l.list + l.end; !strings.Contains(strings.Join(strings.Fields(raw), " "), want) {
			t.Errorf("README.md does not say %q (go test ./report -update rewrites it)", want)
		}
	}

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
		if *update {
			if end := strings.Index(example, "\nPASS "); end >= 0 {
				example = table + example[end+1:]
				raw = raw[:start+1] + example
			}
		}
		if !strings.HasPrefix(example, table) {
			t.Errorf("README.md's quickstart example does not begin as the table prints at 80 columns (go test ./report -update rewrites it):\n%s", table)
		}
	}
	if *update && raw != string(b) {
		if err := os.WriteFile(path, []byte(raw), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// rewrap replaces the text in raw from prefix to the first end after it
// with prefix+text, wrapped at spaces to 100 columns; continuation lines
// take the indent of the line prefix starts on.
func rewrap(t *testing.T, raw, prefix, text, end string) string {
	t.Helper()
	i := strings.Index(raw, prefix)
	if i < 0 {
		t.Errorf("README.md has no %q to rewrite", prefix)
		return raw
	}
	j := strings.Index(raw[i+len(prefix):], end)
	if j < 0 {
		t.Errorf("README.md: no %q after %q", end, prefix)
		return raw
	}
	lineStart := strings.LastIndex(raw[:i], "\n") + 1
	indent := raw[lineStart:i]
	indent = indent[:len(indent)-len(strings.TrimLeft(indent, " "))]
	if indent == "" && strings.HasPrefix(prefix, "- ") {
		indent = "  "
	}
	const width = 100
	var out strings.Builder
	col := i - lineStart
	for k, w := range strings.Fields(prefix + text) {
		switch {
		case k == 0:
		case col+1+len(w) > width:
			out.WriteString("\n" + indent)
			col = len(indent)
		default:
			out.WriteByte(' ')
			col++
		}
		out.WriteString(w)
		col += len(w)
	}
	return raw[:i] + out.String() + raw[i+len(prefix)+j+len(end):]
}
