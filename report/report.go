// Package report renders judged runs: a table for people, Markdown for CI
// summaries and JSON for scripts. It only renders; the numbers come from
// package check.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/internal/ansi"
)

// Format is one output format -o accepts.
type Format struct {
	// Name is the -o value (and the golden file report/testdata/NAME.golden).
	Name string
	// Doc says what it is for, in completions.
	Doc string
	// Write renders runs to w. Only the table reads opts.
	Write func(w io.Writer, runs []check.Run, opts Options) error
	// NoRun renders why no run was judged; nil for the table, whose
	// reader has the error on stderr.
	NoRun func(w io.Writer, n NoRun) error
}

// Formats are the output formats -o accepts, the default first.
var Formats = []Format{
	{Name: "table", Doc: "a table for people (the default)", Write: Table},
	{Name: "json", Doc: "for scripts", Write: func(w io.Writer, runs []check.Run, _ Options) error { return JSON(w, runs) }, NoRun: noRunJSON},
	{Name: "markdown", Doc: "for CI summaries", Write: func(w io.Writer, runs []check.Run, _ Options) error { return Text(w, runs, true) }, NoRun: noRunMarkdown},
	{Name: "junit", Doc: "JUnit XML for CI test reporters", Write: func(w io.Writer, runs []check.Run, _ Options) error { return JUnit(w, runs) }, NoRun: noRunJUnit},
}

// NoRun says why dqbench judged no run, for a report that CI parses all
// the same: the scenario or the flags were invalid (verdict INVALID, exit
// code 2), or it stopped before it had a run to judge (ERROR).
type NoRun struct {
	Verdict string
	// Error is what went wrong, one problem a line; a problem in a
	// scenario file starts with FILE:LINE:COL.
	Error string
}

// Problems are the lines of the error.
func (n NoRun) Problems() []string { return strings.Split(strings.TrimRight(n.Error, "\n"), "\n") }

// WriteNoRun renders n in format; the table writes nothing.
func WriteNoRun(w io.Writer, format string, n NoRun) error {
	for _, f := range Formats {
		if f.Name == format {
			if f.NoRun == nil {
				return nil
			}
			return f.NoRun(w, n)
		}
	}
	return fmt.Errorf("unknown output format %q (allowed: %s)", format, strings.Join(FormatNames(), ", "))
}

// noRunJSON writes {"passed": false, "valid": false, "error": ..., "runs": []}.
func noRunJSON(w io.Writer, n NoRun) error {
	return encodeJSON(w, jsonReport{SchemaVersion: SchemaVersion, Runs: []jsonRun{}, Error: n.Error})
}

// noRunMarkdown writes a heading with the verdict and the problems.
func noRunMarkdown(w io.Writer, n NoRun) error {
	fmt.Fprintf(w, "### dqbench: %s\n\n", n.Verdict)
	for _, p := range n.Problems() {
		fmt.Fprintf(w, "- %s\n", p)
	}
	return nil
}

// FormatNames lists the -o values Formats has, in order.
func FormatNames() []string {
	out := make([]string, len(Formats))
	for i, f := range Formats {
		out[i] = f.Name
	}
	return out
}

// PipedWidth is the width the table is fitted to when the output is not
// a terminal (Options.Width 0): a CI log gets the columns of an 80-column
// terminal, not a wall of every count; -o json has them all.
const PipedWidth = 80

// Options say where a table is shown.
type Options struct {
	// Width is the terminal's width in columns; 0 when the output is not
	// a terminal: the table is then fitted to PipedWidth and lines are
	// not wrapped.
	Width int
	// Wide keeps every column, on a terminal or piped.
	Wide bool
	// Color colours non-zero duplicates and losses and the verdicts.
	Color bool
}

// Write renders runs to w in format ("" is the table). Only the table
// reads opts; JSON, Markdown and JUnit keep every column and never colour.
func Write(w io.Writer, format string, runs []check.Run, opts Options) error {
	if format == "" {
		format = Formats[0].Name
	}
	for _, f := range Formats {
		if f.Name == format {
			return f.Write(w, runs, opts)
		}
	}
	return fmt.Errorf("unknown output format %q (allowed: %s)", format, strings.Join(FormatNames(), ", "))
}

// Passed reports whether every run passed.
func Passed(runs []check.Run) bool {
	for _, r := range runs {
		if !r.Passed {
			return false
		}
	}
	return true
}

type jsonRun struct {
	Scenario   string `json:"scenario"`
	Seed       int64  `json:"seed"`
	Broker     string `json:"broker"`
	Messages   int    `json:"messages"`
	Passed     bool   `json:"passed"`
	DurationMS int64  `json:"duration_ms"`
	Incomplete string `json:"incomplete,omitempty"`
	Error      string `json:"error,omitempty"`
	// Provenance says what produced the run.
	Provenance *check.Provenance `json:"provenance,omitempty"`
	// Valid is false when the run could not start, ended early or has a
	// variant whose experiment does not count: exit code 3.
	Valid    bool            `json:"valid"`
	Variants []check.Variant `json:"variants"`
}

// SchemaVersion is the version of the JSON report's shape (-o json),
// its schema_version: raised when a key is removed, renamed or changes
// meaning; a new key does not raise it. "dqbench schema --output" prints
// the JSON Schema of the shape.
const SchemaVersion = 1

// jsonReport is the whole JSON document.
type jsonReport struct {
	SchemaVersion int  `json:"schema_version" jsonschema:"description=the version of this document's shape (dqbench schema --output prints its JSON Schema)"`
	Passed        bool `json:"passed"`
	// Valid is false when a run is not (exit code 3), or no run was
	// judged (Error: exit code 2, or 3).
	Valid bool `json:"valid"`
	// Error says why no run was judged (then Runs is empty): an invalid
	// scenario or flag, FILE:LINE:COL first where there is one.
	Error string    `json:"error,omitempty"`
	Runs  []jsonRun `json:"runs"`
}

// JSON writes {"passed": bool, "valid": bool, "runs": [...]}.
func JSON(w io.Writer, runs []check.Run) error {
	out := jsonReport{SchemaVersion: SchemaVersion, Passed: Passed(runs), Valid: true, Runs: []jsonRun{}}
	for _, r := range runs {
		vs := append([]check.Variant{}, r.Variants...) // render, never change the input
		for i := range vs {
			if vs[i].Expectations == nil {
				vs[i].Expectations = []check.ExpectationResult{}
			}
			if vs[i].LostByCause == nil {
				vs[i].LostByCause = map[string]int{}
			}
		}
		out.Runs = append(out.Runs, jsonRun{
			Scenario: r.Scenario, Seed: r.Seed, Broker: r.Broker, Messages: r.Messages,
			Passed: r.Passed, DurationMS: r.Duration.Milliseconds(), Incomplete: r.Incomplete, Error: r.Error, Provenance: r.Provenance,
			Valid: r.Valid(), Variants: vs,
		})
		out.Valid = out.Valid && r.Valid()
	}
	return encodeJSON(w, out)
}

func encodeJSON(w io.Writer, out jsonReport) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

// column is one column of the table: a name, its alignment and its cell.
type column struct {
	header string
	align  tw.Align
	cell   func(v check.Variant) int // nil for the name columns
	name   func(v check.Variant) string
	count  string // the count's name, for counts
}

// columns are the variant's name and strategy, then a column per count.
var columns = func() []column {
	cols := []column{
		{header: "variant", align: tw.AlignLeft, name: func(v check.Variant) string { return v.Name }},
		{header: "strategy", align: tw.AlignLeft, name: func(v check.Variant) string { return v.Strategy }},
	}
	for _, c := range check.Table {
		cols = append(cols, column{header: c.Column, align: tw.AlignRight, count: c.Name,
			cell: func(v check.Variant) int { return c.Value(v.Counts) }})
	}
	return cols
}()

// lesson are the counts a narrow table always shows: what the variants
// are compared on.
var lesson = []string{"redelivered", "effects", "duplicates", "lost", "faults_injected"}

// colored are the counts coloured when not zero.
var colored = []string{"duplicates", "lost"}

// telling keeps the columns that carry the lesson: the names, the lesson
// counts, and any other count that differs between the variants or is
// neither 0 nor the number of messages (every intent) in them.
func telling(r check.Run) []column {
	var out []column
	for _, c := range columns {
		if c.cell == nil || slices.Contains(lesson, c.count) {
			out = append(out, c)
			continue
		}
		first := c.cell(r.Variants[0])
		same := true
		for _, v := range r.Variants {
			same = same && c.cell(v) == first
		}
		if !same || (first != 0 && first != r.Messages) {
			out = append(out, c)
		}
	}
	return out
}

// withoutStrategy drops the strategy column when every variant is named
// after its strategy (it would repeat the first column) or every variant
// has the same one; shared is then that one strategy, for the note under
// the table, or "" when the names say it.
func withoutStrategy(r check.Run, cols []column) (narrow []column, shared string) {
	named, same := true, true
	for _, v := range r.Variants {
		named = named && v.Name == v.Strategy
		same = same && v.Strategy == r.Variants[0].Strategy
	}
	if !named && !same {
		return cols, ""
	}
	if !named {
		shared = r.Variants[0].Strategy
	}
	return slices.DeleteFunc(slices.Clone(cols), func(c column) bool { return c.header == "strategy" }), shared
}

// Table writes the table for people: when the full table is wider than
// the terminal (opts.Width, or PipedWidth when piped) only the columns that
// carry the lesson, unless opts.Wide; colour with opts.Color.
func Table(w io.Writer, runs []check.Run, opts Options) error {
	return text(w, runs, false, opts)
}

// Text writes one table per run followed by its verdict lines, with every
// column and no colour; markdown selects a Markdown table for CI summaries.
func Text(w io.Writer, runs []check.Run, markdown bool) error {
	return text(w, runs, markdown, Options{Wide: true})
}

func text(w io.Writer, runs []check.Run, markdown bool, opts Options) error {
	p := ansi.Paint(opts.Color && !markdown)
	for i, r := range runs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if markdown {
			fmt.Fprintf(w, "### %s\n\n", r.Scenario)
		} else {
			fmt.Fprintf(w, "scenario %s\n", p.Bold(r.Scenario))
		}
		bullet := ""
		if markdown {
			bullet = "- "
		}
		line := func(format string, args ...any) {
			for _, l := range wrap(fmt.Sprintf(format, args...), opts.Width) {
				fmt.Fprintln(w, l)
			}
		}
		if r.Error != "" {
			// Nothing ran: no table, the reason and the verdict.
			line("%s%s %s: could not run: %s", bullet, p.Red("ERROR"), r.Scenario, r.Error)
			line("%s%s  seed %d · %d messages per variant · %s", bullet, runVerdict(p, r), r.Seed, r.Messages, r.Broker)
			continue
		}
		table, hidden, shared, err := fitTable(r, markdown, opts, p)
		if err != nil {
			return err
		}
		io.WriteString(w, table)
		switch {
		case shared != "" && hidden > 0:
			line("(every variant's strategy is %s; %d columns that are the same in every variant hidden; --wide shows them)", shared, hidden)
		case shared != "":
			line("(every variant's strategy is %s; --wide shows the column)", shared)
		case hidden > 0:
			line("(%d columns that are the same in every variant hidden; --wide shows them)", hidden)
		}
		if markdown {
			fmt.Fprintln(w)
		}
		for _, v := range r.Variants {
			for _, e := range v.Expectations {
				if e.Skipped {
					line("%s%s %s: %s (got %d; not judged: the run was interrupted)", bullet, p.Yellow(e.Verdict()), v.Name, e.Check, e.Actual)
					continue
				}
				line("%s%s %s: %s (got %d)", bullet, verdict(p, e.Passed), v.Name, e.Check, e.Actual)
			}
			for _, inv := range v.Invalid {
				line("%s%s %s: %s", bullet, p.Red("INVALID"), v.Name, inv)
			}
		}
		for _, v := range r.Variants {
			for _, n := range v.Notes {
				line("%swhy %s: %s", bullet, v.Name, n)
			}
		}
		for _, v := range r.Variants {
			if v.Legs != nil {
				line("%slegs %s: %s", bullet, v.Name, v.LegsText())
			}
			if len(v.KilledPIDs) > 0 {
				line("%skilled %s: %d consumer processes (SIGKILL), pids %s", bullet, v.Name, len(v.KilledPIDs), joinInts(v.KilledPIDs))
			}
			for _, g := range v.VariesGroups() {
				line("%stiming %s: %s may differ in another run with the same seed: %s", bullet, v.Name, g.Counts, g.Why)
			}
			if g := v.MaxRedeliveryGap; g.Intent != 0 || g.Window != nil {
				line("%sgap %s: %s", bullet, v.Name, g.Text())
			}
			if g := v.MaxRepublishGap; g != nil {
				line("%sgap %s: %s", bullet, v.Name, g.RepublishText())
			}
		}
		if r.Incomplete != "" {
			line("%s%s %s: %s", bullet, p.Red("INCOMPLETE"), r.Scenario, r.Incomplete)
		}
		if pr := r.Provenance; pr != nil {
			line("%sran on %s · dqbench %s · %s · %s", bullet, pr.Broker, pr.DQBench, pr.Go, strings.Join(append(slices.Clone(pr.Clients), pr.Stores...), " · "))
		}
		line("%s%s  seed %d · %d messages per variant · %s · %s",
			bullet, runVerdict(p, r), r.Seed, r.Messages, r.Broker, r.Duration.Round(time.Millisecond))
	}
	return nil
}

// fitTable renders r's table with every column, or, on a terminal too
// narrow for it (PipedWidth when piped), with fewer: the columns that carry the lesson, then
// without the strategy column when it repeats the names, then without the
// cells' padding, then as several tables one under the other, each with
// the variant names and the next count columns. It returns the table, how
// many count columns it left out and, when it left out the strategy column
// because every variant has the same strategy, that strategy.
func fitTable(r check.Run, markdown bool, opts Options, p ansi.Paint) (table string, hidden int, shared string, err error) {
	full, err := render(r, columns, markdown, p, true)
	limit := opts.Width
	if limit <= 0 {
		limit = PipedWidth
	}
	if err != nil || markdown || opts.Wide || len(r.Variants) == 0 || width(full) <= limit {
		return full, 0, "", err
	}
	cols := telling(r)
	hidden = counts(columns) - counts(cols)
	narrow, shared := withoutStrategy(r, cols)
	for _, try := range []struct {
		cols    []column
		padding bool
		shared  string
	}{{cols, true, ""}, {narrow, true, shared}, {narrow, false, shared}} {
		if out, err := render(r, try.cols, false, p, try.padding); err != nil || width(out) <= limit {
			return out, hidden, try.shared, err
		}
	}
	out, err := stacked(r, narrow, limit, p)
	return out, hidden, shared, err
}

// counts is how many of cols are counts.
func counts(cols []column) int {
	n := 0
	for _, c := range cols {
		if c.cell != nil {
			n++
		}
	}
	return n
}

func render(r check.Run, cols []column, markdown bool, p ansi.Paint, padding bool) (string, error) {
	var buf strings.Builder
	header := make([]string, len(cols))
	align := make([]tw.Align, len(cols))
	for i, c := range cols {
		header[i], align[i] = c.header, c.align
	}
	opts := []tablewriter.Option{
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{Global: tw.AlignRight, PerColumn: align}),
	}
	if markdown {
		opts = append(opts, tablewriter.WithRenderer(renderer.NewMarkdown()))
	}
	if !padding {
		opts = append(opts, tablewriter.WithPadding(tw.Padding{Left: "", Right: "", Overwrite: true}))
	}
	t := tablewriter.NewTable(&buf, opts...)
	t.Header(header)
	for _, v := range r.Variants {
		row := make([]string, len(cols))
		for i, c := range cols {
			if c.cell == nil {
				row[i] = c.name(v)
				continue
			}
			n := c.cell(v)
			row[i] = strconv.Itoa(n)
			if n != 0 && slices.Contains(colored, c.count) {
				row[i] = p.Red(row[i])
			}
		}
		if err := t.Append(row); err != nil {
			return "", err
		}
	}
	if err := t.Render(); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// width is the widest line of s on a terminal, colour codes left out.
func width(s string) int { return ansi.Width(s) }

// wrap breaks a line at spaces to fit width columns, indenting the rest;
// width 0 keeps it whole.
func wrap(s string, width int) []string { return ansi.Wrap(s, width, "    ") }

// runVerdict is a run's last word, the one its exit code agrees with
// (check.Run.Verdict), coloured.
func runVerdict(p ansi.Paint, r check.Run) string {
	if v := r.Verdict(); v != check.VerdictPass {
		return p.Red(v)
	}
	return p.Green(check.VerdictPass)
}

func verdict(p ansi.Paint, ok bool) string {
	if ok {
		return p.Green("PASS")
	}
	return p.Red("FAIL")
}

func joinInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ", ")
}
