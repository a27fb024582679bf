package sweep

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/internal/ansi"
	"github.com/dqbench/dqbench/internal/junitxml"
)

// Options say where a report is shown.
type Options struct {
	// Width is the terminal's width in columns; 0 when the output is not
	// a terminal: lines wrap at 80 columns then. Commands to copy stay
	// whole.
	Width int
}

// tableFailures is how many failing runs the table lists; -o json lists
// them all.
const tableFailures = 20

// tableMissed is how many runs the table lists for a failed sweep
// expectation; -o json lists up to MaxMissed.
const tableMissed = 5

// sparkBins is the width of a distribution's sparkline.
const sparkBins = 8

// Table writes the summary for people, in 80 columns: per variant the
// distribution of the counts that tell something, how often each
// expectation held, then the failing runs with their reproducers and the
// counts that moved between repeats.
func Table(w io.Writer, s Summary, opts Options) error {
	var b strings.Builder
	width := opts.Width
	if width <= 0 {
		width = 80
	}
	line := func(indent, text string) {
		for _, l := range ansi.Wrap(indent+text, width, indent+"    ") {
			b.WriteString(l + "\n")
		}
	}
	line("", header(s))
	for _, v := range s.Variants {
		b.WriteString("\n")
		line("", fmt.Sprintf("variant %s · strategy %s · %d valid runs", v.Name, v.Strategy, v.Runs))
		if rows := shown(v, s.Messages); len(rows) > 0 {
			b.WriteString(countRows(rows))
		}
		for _, e := range v.Expectations {
			line("  ", expectationLine(e))
		}
		for _, e := range v.SweepExpectations {
			line("  ", sweepExpectationLine(e))
		}
	}
	if n := SweepFailed(s); n > 0 {
		b.WriteString("\n")
		line("", fmt.Sprintf("sweep expectations that failed: %d", n))
		for _, v := range s.Variants {
			for _, e := range v.SweepExpectations {
				if e.Passed {
					continue
				}
				line("  ", fmt.Sprintf("%s: %s: %s", v.Name, e.Check, heldIn(e)))
				for i, m := range e.Missed {
					if i == tableMissed {
						line("    ", fmt.Sprintf("… and %d more (-o json lists %d)", e.Runs-e.Held-tableMissed, len(e.Missed)))
						break
					}
					line("    ", fmt.Sprintf("%s: %s %d", runName(m.RunID, s.Repeat), countOf(e.Check), m.Got))
					b.WriteString("      " + m.Reproduce + "\n")
				}
			}
		}
	}
	if len(s.Failures) > 0 {
		b.WriteString("\n")
		line("", fmt.Sprintf("runs that did not pass: %d", len(s.Failures)))
		for i, f := range s.Failures {
			if i == tableFailures {
				line("  ", fmt.Sprintf("… and %d more (-o json lists them all)", len(s.Failures)-tableFailures))
				break
			}
			line("  ", fmt.Sprintf("%s %s: %s", f.Verdict, runName(f.RunID, s.Repeat), strings.Join(f.Problems, "; ")))
			// Commands stay whole, to be copied.
			b.WriteString("    " + f.Reproduce + "\n")
			if f.Saved != "" {
				b.WriteString("    dqbench check " + f.Saved + "\n")
			}
		}
	}
	if len(s.Moved) > 0 {
		b.WriteString("\n")
		line("", "counts that moved between repeats of one seed, not in the variant's varies:")
		line("", "(each a defect to fix, or a count to declare in varies:)")
		for _, m := range s.Moved {
			line("  ", fmt.Sprintf("seed %d: %s %s: %s", m.Seed, m.Variant, m.Count, joinInts(m.Values)))
		}
	}
	b.WriteString("\n")
	line("", footer(s))
	_, err := io.WriteString(w, b.String())
	return err
}

// countRows are the distribution rows of a variant, under a header: the
// count's name left, its numbers right, each column as wide as its widest.
func countRows(rows []CountSummary) string {
	cells := [][]string{{"count", "min", "median", "p99", "max", "distribution"}}
	for _, c := range rows {
		cells = append(cells, []string{column(c.Name), fmt.Sprint(c.Min), fmt.Sprint(c.Median), fmt.Sprint(c.P99), fmt.Sprint(c.Max), Sparkline(c.Values, sparkBins)})
	}
	widths := make([]int, len(cells[0]))
	for _, row := range cells {
		for i, cell := range row {
			widths[i] = max(widths[i], ansi.Width(cell))
		}
	}
	var b strings.Builder
	for _, row := range cells {
		b.WriteString("  " + row[0] + strings.Repeat(" ", widths[0]-ansi.Width(row[0])))
		for i := 1; i < len(row)-1; i++ {
			b.WriteString(strings.Repeat(" ", 2+widths[i]-ansi.Width(row[i])) + row[i])
		}
		b.WriteString("  " + row[len(row)-1] + "\n")
	}
	return b.String()
}

// header is the sweep's first line.
func header(s Summary) string {
	h := fmt.Sprintf("sweep %s · seeds %s", s.Scenario, s.Seeds)
	if s.Repeat > 1 {
		h += fmt.Sprintf(" × %d", s.Repeat)
	}
	if s.Shard != "" {
		h += " · shard " + s.Shard
	}
	h += fmt.Sprintf(" · %d messages", s.Messages)
	if s.Broker != "" {
		h += " · " + s.Broker
	}
	return h
}

// footer is the verdict line: the word the exit code agrees with, how many
// runs finished and how they ended, the rate.
func footer(s Summary) string {
	parts := []string{fmt.Sprintf("%d/%d runs", s.Finished, s.Runs)}
	for _, v := range slices.Backward(check.Verdicts) {
		if n := s.Verdicts[v]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, v))
		}
	}
	if n := SweepFailed(s); n == 1 {
		parts = append(parts, "1 sweep expectation failed")
	} else if n > 1 {
		parts = append(parts, fmt.Sprintf("%d sweep expectations failed", n))
	}
	if s.Interrupted {
		parts = append(parts, "interrupted")
	}
	if len(s.MissingShards) > 0 {
		parts = append(parts, "missing shards "+strings.Join(s.MissingShards, ", "))
	}
	if s.DurationMS > 0 {
		parts = append(parts, fmt.Sprintf("%.2f runs/s", s.RunsPerSecond),
			(time.Duration(s.DurationMS) * time.Millisecond).Round(100*time.Millisecond).String())
	}
	return s.Verdict + "  " + strings.Join(parts, " · ")
}

// shown are the counts worth a row: those an expectation reads, and those
// that are not the same in every run, or are neither 0 nor every intent.
func shown(v VariantSummary, messages int) []CountSummary {
	var out []CountSummary
	for _, c := range v.Counts {
		expected := slices.ContainsFunc(v.Expectations, func(e ExpectationSummary) bool {
			return strings.HasPrefix(e.Check, c.Name+" ")
		})
		switch {
		case len(c.Values) == 0:
		case expected, c.Min != c.Max, c.Min != 0 && c.Min != messages:
			out = append(out, c)
		}
	}
	return out
}

// column is the report's header for a count ("faults" for
// faults_injected).
func column(name string) string {
	if c, ok := check.LookupCount(name); ok {
		return c.Column
	}
	return name
}

// expectationLine is "PASS duplicates > 0 in 200 of 200 runs" or "FAIL
// lost == 0 failed in 3 of 200 runs: seeds 4, 17, 99".
func expectationLine(e ExpectationSummary) string {
	n := e.Held + e.Failed
	if e.Failed == 0 {
		return fmt.Sprintf("PASS %s in %d of %d runs", e.Check, n, n)
	}
	return fmt.Sprintf("FAIL %s failed in %d of %d runs: %s", e.Check, e.Failed, n, seedList(e.FailedIn, 10))
}

// sweepExpectationLine is "PASS sweep: lost == 0 in every run: held in
// 200 of 200 runs" or "FAIL sweep: duplicates > 0 in at least 95% of
// runs: held in 180 of 200 runs (90%): not in seeds 3, 8, …".
func sweepExpectationLine(e SweepExpectationSummary) string {
	verdict := check.VerdictPass
	if !e.Passed {
		verdict = check.VerdictFail
	}
	l := fmt.Sprintf("%s sweep: %s: %s", verdict, e.Check, heldIn(e))
	if e.Held < e.Runs {
		ids := make([]RunID, len(e.Missed))
		for i, m := range e.Missed {
			ids[i] = m.RunID
		}
		l += ": not in " + seedList(ids, 10)
	}
	return l
}

// heldIn is "held in 180 of 200 runs (90%)", "no valid run" when none.
func heldIn(e SweepExpectationSummary) string {
	if e.Runs == 0 {
		return "no valid run to hold in"
	}
	if e.Held == e.Runs {
		return fmt.Sprintf("held in %d of %d runs", e.Held, e.Runs)
	}
	pct := strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.1f", float64(e.Held)*100/float64(e.Runs)), "0"), ".")
	return fmt.Sprintf("held in %d of %d runs (%s%%)", e.Held, e.Runs, pct)
}

// countOf is the count a check reads: "duplicates" of "duplicates > 0 …".
func countOf(check string) string {
	name, _, _ := strings.Cut(check, " ")
	return name
}

// seedList is "seeds 4, 17, 99" (each seed once), the first limit of them.
func seedList(ids []RunID, limit int) string {
	var seeds []int64
	for _, id := range ids {
		if !slices.Contains(seeds, id.Seed) {
			seeds = append(seeds, id.Seed)
		}
	}
	word := "seeds"
	if len(seeds) == 1 {
		word = "seed"
	}
	var parts []string
	for i, s := range seeds {
		if i == limit {
			parts = append(parts, fmt.Sprintf("… (%d seeds)", len(seeds)))
			break
		}
		parts = append(parts, fmt.Sprint(s))
	}
	return word + " " + strings.Join(parts, ", ")
}

// runName is "seed 4", or "seed 4 repeat 2" in a sweep with repeats.
func runName(id RunID, repeat int) string {
	if repeat > 1 {
		return fmt.Sprintf("seed %d repeat %d", id.Seed, id.Repeat)
	}
	return fmt.Sprintf("seed %d", id.Seed)
}

func joinInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ", ")
}

// sparks are the bar heights of a sparkline, lowest first.
var sparks = []rune("▁▂▃▄▅▆▇█")

// Sparkline draws how many runs had each value, [value, runs] by value,
// in at most bins characters from the smallest value to the largest: one
// character per value when they fit, else per equal range of values; a
// blank where no run fell.
func Sparkline(values [][2]int, bins int) string {
	if len(values) == 0 {
		return ""
	}
	lo, hi := values[0][0], values[len(values)-1][0]
	span := hi - lo + 1
	per := (span + bins - 1) / bins // values per character
	n := (span + per - 1) / per
	counts := make([]int, n)
	for _, vr := range values {
		counts[(vr[0]-lo)/per] += vr[1]
	}
	top := slices.Max(counts)
	out := make([]rune, n)
	for i, c := range counts {
		if c == 0 {
			out[i] = ' '
			continue
		}
		out[i] = sparks[(c*len(sparks)-1)/top]
	}
	return string(out)
}

// Format is one output format of a sweep's report (-o).
type Format struct {
	Name string
	Doc  string
	// Write renders s to w. Only the table reads opts.
	Write func(w io.Writer, s Summary, opts Options) error
}

// Formats are the formats -o accepts, the default first.
var Formats = []Format{
	{Name: "table", Doc: "a report for people, 80 columns (the default)", Write: Table},
	{Name: "json", Doc: "for scripts and dqbench merge (schema_version " + fmt.Sprint(SchemaVersion) + ")", Write: func(w io.Writer, s Summary, _ Options) error { return JSON(w, s) }},
	{Name: "markdown", Doc: "for CI summaries", Write: func(w io.Writer, s Summary, _ Options) error { return Markdown(w, s) }},
	{Name: "junit", Doc: "JUnit XML: a testcase per variant and expectation", Write: func(w io.Writer, s Summary, _ Options) error { return JUnit(w, s) }},
	{Name: "html", Doc: "a self-contained page: per variant and count the distribution's histogram, the failing runs linked", Write: func(w io.Writer, s Summary, _ Options) error { return HTML(w, s) }},
}

// FormatNames lists the -o values, the default first.
func FormatNames() []string {
	out := make([]string, len(Formats))
	for i, f := range Formats {
		out[i] = f.Name
	}
	return out
}

// Write renders s in format.
func Write(w io.Writer, format string, s Summary, opts Options) error {
	for _, f := range Formats {
		if f.Name == format {
			return f.Write(w, s, opts)
		}
	}
	return fmt.Errorf("unknown output format %q (allowed: %s)", format, strings.Join(FormatNames(), ", "))
}

// JSON writes the summary as it is: the document merge reads.
func JSON(w io.Writer, s Summary) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(s)
}

// markdownFailures is how many failing runs the Markdown report lists.
const markdownFailures = 100

// markdownMissed is how many runs the Markdown report lists for a failed
// sweep expectation.
const markdownMissed = 20

// Markdown writes the summary for a CI job summary ($GITHUB_STEP_SUMMARY).
func Markdown(w io.Writer, s Summary) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### dqbench sweep %s: %s\n\n%s\n\n%s\n", s.Scenario, s.Verdict, header(s), footer(s))
	for _, v := range s.Variants {
		fmt.Fprintf(&b, "\n#### %s (strategy %s), %d valid runs\n\n", v.Name, v.Strategy, v.Runs)
		if rows := shown(v, s.Messages); len(rows) > 0 {
			b.WriteString("| count | min | median | p99 | max | distribution |\n|---|--:|--:|--:|--:|---|\n")
			for _, c := range rows {
				fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | `%s` |\n", column(c.Name), c.Min, c.Median, c.P99, c.Max, Sparkline(c.Values, sparkBins))
			}
			b.WriteString("\n")
		}
		for _, e := range v.Expectations {
			fmt.Fprintf(&b, "- %s\n", expectationLine(e))
		}
		for _, e := range v.SweepExpectations {
			fmt.Fprintf(&b, "- %s\n", sweepExpectationLine(e))
			if !e.Passed {
				for i, m := range e.Missed {
					if i == markdownMissed {
						fmt.Fprintf(&b, "  - … and %d more (-o json lists %d)\n", e.Runs-e.Held-markdownMissed, len(e.Missed))
						break
					}
					fmt.Fprintf(&b, "  - %s: %s %d: `%s`\n", runName(m.RunID, s.Repeat), countOf(e.Check), m.Got, m.Reproduce)
				}
			}
		}
	}
	if len(s.Failures) > 0 {
		fmt.Fprintf(&b, "\n#### Runs that did not pass (%d)\n\n", len(s.Failures))
		for i, f := range s.Failures {
			if i == markdownFailures {
				fmt.Fprintf(&b, "- … and %d more (-o json lists them all)\n", len(s.Failures)-markdownFailures)
				break
			}
			fmt.Fprintf(&b, "- %s %s: %s: `%s`\n", f.Verdict, runName(f.RunID, s.Repeat), strings.Join(f.Problems, "; "), f.Reproduce)
		}
	}
	if len(s.Moved) > 0 {
		b.WriteString("\n#### Counts that moved between repeats of one seed, not declared in varies:\n\n")
		for _, m := range s.Moved {
			fmt.Fprintf(&b, "- seed %d: %s %s: %s\n", m.Seed, m.Variant, m.Count, joinInts(m.Values))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// JUnit writes the summary as JUnit XML: one testsuite for the sweep, a
// testcase per variant and expectation (a failure when the expectation
// failed in any run, listing those runs and their reproducers), a
// testcase per variant and sweep expectation (a failure when it did not
// hold in enough runs, listing the runs it missed), and one
// for the runs themselves (an error when a run could not start, was cut
// short or does not count, or runs are missing).
func JUnit(w io.Writer, s Summary) error {
	seconds := fmt.Sprintf("%.3f", float64(s.DurationMS)/1000)
	suite := junitxml.Suite{Name: "sweep " + s.Scenario, Time: seconds, Properties: []junitxml.Property{
		{Name: "seeds", Value: s.Seeds}, {Name: "repeat", Value: fmt.Sprint(s.Repeat)}, {Name: "messages", Value: fmt.Sprint(s.Messages)},
		{Name: "broker", Value: s.Broker}, {Name: "runs", Value: fmt.Sprint(s.Runs)}, {Name: "finished", Value: fmt.Sprint(s.Finished)},
	}}
	if s.Shard != "" {
		suite.Properties = append(suite.Properties, junitxml.Property{Name: "shard", Value: s.Shard})
	}
	failureOf := map[RunID]Failure{}
	var broken []string
	for _, f := range s.Failures {
		failureOf[f.RunID] = f
		if f.Verdict != check.VerdictFail {
			broken = append(broken, fmt.Sprintf("%s %s: %s\n  %s", f.Verdict, runName(f.RunID, s.Repeat), strings.Join(f.Problems, "; "), f.Reproduce))
		}
	}
	for _, v := range s.Variants {
		for _, e := range v.Expectations {
			c := junitxml.Case{Name: v.Name + ": " + e.Check, Classname: s.Scenario + "." + v.Name, Time: "0"}
			if e.Failed > 0 {
				var text []string
				for _, id := range e.FailedIn {
					f := failureOf[id]
					got := ""
					for _, p := range f.Problems {
						if strings.HasPrefix(p, v.Name+": "+e.Check+" ") {
							got = strings.TrimPrefix(p, v.Name+": ")
						}
					}
					text = append(text, fmt.Sprintf("%s: %s\n  %s", runName(id, s.Repeat), got, f.Reproduce))
				}
				c.Failure = &junitxml.Problem{
					Message: fmt.Sprintf("failed in %d of %d runs: %s", e.Failed, e.Held+e.Failed, seedList(e.FailedIn, 10)),
					Type:    "expectation", Text: strings.Join(text, "\n"),
				}
				suite.Failures++
			}
			suite.Cases = append(suite.Cases, c)
		}
		for _, e := range v.SweepExpectations {
			c := junitxml.Case{Name: v.Name + ": sweep: " + e.Check, Classname: s.Scenario + "." + v.Name, Time: "0"}
			if !e.Passed {
				var text []string
				for _, m := range e.Missed {
					text = append(text, fmt.Sprintf("%s: %s %d\n  %s", runName(m.RunID, s.Repeat), countOf(e.Check), m.Got, m.Reproduce))
				}
				if more := e.Runs - e.Held - len(e.Missed); more > 0 {
					text = append(text, fmt.Sprintf("… and %d more", more))
				}
				c.Failure = &junitxml.Problem{Message: heldIn(e), Type: "sweep expectation", Text: strings.Join(text, "\n")}
				suite.Failures++
			}
			suite.Cases = append(suite.Cases, c)
		}
	}
	runs := junitxml.Case{Name: "every run completed and counts", Classname: s.Scenario, Time: seconds}
	if missing := s.Runs - s.Finished; missing > 0 || len(broken) > 0 {
		msg := fmt.Sprintf("%d of %d runs could not start, were cut short or do not count", len(broken), s.Runs)
		if missing > 0 {
			msg += fmt.Sprintf("; %d did not run", missing)
			broken = append(broken, footer(s))
		}
		runs.Error = &junitxml.Problem{Message: msg, Type: "invalid", Text: strings.Join(broken, "\n")}
		suite.Errors++
	}
	suite.Cases = append(suite.Cases, runs)
	suite.Tests = len(suite.Cases)
	var moved []string
	for _, m := range s.Moved {
		moved = append(moved, fmt.Sprintf("moved between repeats, not declared in varies: seed %d: %s %s: %s", m.Seed, m.Variant, m.Count, joinInts(m.Values)))
	}
	suite.SystemOut = strings.Join(moved, "\n")
	all := junitxml.Suites{Name: "dqbench sweep", Tests: suite.Tests, Failures: suite.Failures, Errors: suite.Errors, Time: seconds, Suites: []junitxml.Suite{suite}}
	return junitxml.Write(w, all)
}
