package cmd

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/report"
	"github.com/dqbench/dqbench/report/html"
	"github.com/dqbench/dqbench/scenario"
	"github.com/dqbench/dqbench/story"
)

// formats are what -o accepts: report's formats and the HTML page, which
// needs the history besides the judgement.
var formats = append(report.FormatNames(), "html")

// outputOptions are the flags run and check share.
type outputOptions struct {
	output string
	html   string // --html FILE
	// --json, --junit and --markdown FILE: the same run's report in each
	// format, besides the one on stdout.
	json, junit, markdown string
	wide                  bool
	// quiet (run --quiet) writes the verdict lines instead of the table
	// and no notices.
	quiet bool
}

// addOutputFlags registers -o/--output, --html, --json, --junit,
// --markdown and --wide.
func addOutputFlags(f *pflag.FlagSet, o *outputOptions) {
	f.StringVarP(&o.output, "output", "o", "table", "output format: "+strings.Join(formats, ", "))
	f.StringVar(&o.html, "html", "", "also write a self-contained HTML report (timelines, stories of duplicated and lost intents) to `FILE`")
	f.StringVar(&o.json, "json", "", "also write the JSON report to `FILE` (the same run: one run, every format)")
	f.StringVar(&o.junit, "junit", "", "also write the JUnit XML report to `FILE`")
	f.StringVar(&o.markdown, "markdown", "", "also write the Markdown report to `FILE` (e.g. \"$GITHUB_STEP_SUMMARY\")")
	f.BoolVar(&o.wide, "wide", false, "show every column of the table, even when it is wider than the terminal (or, piped, than 80 columns)")
}

// check rejects an unknown output format or an --html file that cannot be
// written, before any work is done.
func (o outputOptions) check() error {
	if !slices.Contains(formats, o.output) {
		return withCode(ExitUsage, fmt.Errorf("--output %q is not allowed (allowed: %s)", o.output, strings.Join(formats, ", ")))
	}
	for _, f := range o.files() {
		if fi, err := os.Stat(filepath.Dir(f.path)); err != nil || !fi.IsDir() {
			return withCode(ExitUsage, fmt.Errorf("--%s %s: directory %s does not exist", f.format, f.path, filepath.Dir(f.path)))
		}
	}
	return nil
}

// reportFile is a report written to a file by --html, --json, --junit or
// --markdown: the flag is named for the format.
type reportFile struct{ format, path string }

// files are the reports to write to files, the HTML page first.
func (o outputOptions) files() []reportFile {
	var out []reportFile
	for _, f := range []reportFile{{"html", o.html}, {"json", o.json}, {"junit", o.junit}, {"markdown", o.markdown}} {
		if f.path != "" {
			out = append(out, f)
		}
	}
	return out
}

// writeFile writes a report to its file with the URLs' passwords masked,
// as on stdout.
func (f reportFile) write(b []byte) error {
	if err := os.WriteFile(f.path, []byte(catalog.MaskURLs(string(b))), 0o644); err != nil {
		return fmt.Errorf("--%s: %w", f.format, err)
	}
	return nil
}

// wantHTML says whether the history must be read again for the HTML page.
func (o outputOptions) wantHTML() bool { return o.output == "html" || o.html != "" }

// storiesPerCause is how many duplicated or lost intents of each cause the
// HTML report tells, per variant.
const storiesPerCause = 10

// timelineBins is the number of bins of the HTML report's timelines.
const timelineBins = 150

// judged is a judged run and, when the HTML page is wanted, what it shows.
type judged struct {
	run  check.Run
	html *html.Run
}

// judgeHistory judges a run from its history (one pass) and, for the HTML
// page, reads it a second time for the timeline and the stories of the
// anomalous intents.
func judgeHistory(hist io.ReadSeeker, sc *scenario.Scenario, meta check.Meta, audits map[string]history.Audit, o outputOptions) (judged, error) {
	plan := sc.Plan()
	if !o.wantHTML() {
		r, err := check.Judge(plan, meta, history.ScanRun(hist, meta.Messages), audits)
		return judged{run: r}, err
	}
	in, err := check.Inspect(plan, meta, history.ScanRun(hist, meta.Messages), audits)
	if err != nil {
		return judged{}, err
	}
	var names []string
	var anomalies []check.Anomalies
	for _, v := range plan.Variants {
		names = append(names, v.Name)
		anomalies = append(anomalies, in.Anomalies(v.Name, storiesPerCause))
	}
	if _, err := hist.Seek(0, io.SeekStart); err != nil {
		return judged{}, err
	}
	col, err := story.Collect(history.ScanRun(hist, meta.Messages), names, in.End, timelineBins, story.Anomalous(in, names, storiesPerCause))
	if err != nil {
		return judged{}, err
	}
	y, err := sc.SharedYAML()
	if err != nil {
		return judged{}, err
	}
	return judged{run: in.Run, html: &html.Run{Judged: in.Run, Anomalies: anomalies, Story: col, Scenario: string(y), Broker: in.Broker, Lesson: sc.Description}}, nil
}

// writeReports writes the report in the chosen format to Out and, with
// --html, the HTML page to its file.
func writeReports(s Streams, o outputOptions, all []judged) error {
	var runs []check.Run
	var pages []html.Run
	for _, j := range all {
		runs = append(runs, j.run)
		if j.html != nil {
			pages = append(pages, *j.html)
		}
	}
	// The page is rendered whole, then written through a maskWriter in
	// one write, so that no URL is split between the template's writes.
	var page bytes.Buffer
	if o.html != "" || o.output == "html" {
		if err := html.Write(&page, pages); err != nil {
			return fmt.Errorf("HTML report: %w", err)
		}
	}
	for _, f := range o.files() {
		b := page.Bytes()
		if f.format != "html" {
			var buf bytes.Buffer
			if err := report.Write(&buf, f.format, runs, report.Options{}); err != nil {
				return fmt.Errorf("--%s: %w", f.format, err)
			}
			b = buf.Bytes()
		}
		if err := f.write(b); err != nil {
			return err
		}
		if !o.quiet {
			fmt.Fprintf(s.Err, "wrote the %s report to %s\n", formatTitle(f.format), f.path)
		}
	}
	if o.output == "html" {
		_, err := masked(s.Out).Write(page.Bytes())
		return err
	}
	opts := report.Options{Width: s.Width, Wide: o.wide, Color: s.color()}
	if o.quiet && o.output == "table" {
		return report.Verdicts(s.Out, runs, opts)
	}
	return report.Write(s.Out, o.output, runs, opts)
}

// written notes whether anything was written through it: a command that
// ends in an error without having written its report gets one saying why
// (writeNoRun).
type written struct {
	w    io.Writer
	some bool
}

func (w *written) Write(p []byte) (int, error) {
	w.some = w.some || len(p) > 0
	return w.w.Write(p)
}

// writeNoRun writes the report of a command that ended with exit code
// code and err before it wrote one (an invalid scenario or flag, exit
// code 2, above all): with -o json, markdown, junit or html to Out, and
// with --html to its file, so that what CI parses or opens says INVALID
// (ERROR for another code) and why, not nothing. The output flags are
// read from args whatever else in them is wrong; a bad -o or --html is
// itself the error, and writes nothing.
func writeNoRun(s Streams, root *cobra.Command, args []string, code int, err error) {
	c, _, ferr := root.Find(args)
	if ferr != nil || c.Flags().Lookup("output") == nil {
		return
	}
	o := outputFlagsIn(c, args)
	if o.check() != nil {
		return
	}
	n := report.NoRun{Verdict: check.VerdictError, Error: err.Error()}
	if code == ExitUsage {
		n.Verdict = check.VerdictInvalid
	}
	var page bytes.Buffer
	if o.wantHTML() {
		if err := html.NoRun(&page, n.Verdict, n.Error); err != nil {
			fmt.Fprintf(s.Err, "dqbench: HTML report: %v\n", err)
			return
		}
	}
	for _, f := range o.files() {
		b := page.Bytes()
		if f.format != "html" {
			var buf bytes.Buffer
			if err := report.WriteNoRun(&buf, f.format, n); err != nil {
				fmt.Fprintf(s.Err, "dqbench: --%s: %v\n", f.format, err)
				continue
			}
			b = buf.Bytes()
		}
		if err := f.write(b); err != nil {
			fmt.Fprintf(s.Err, "dqbench: %v\n", err)
		}
	}
	if o.output == "html" {
		_, _ = s.Out.Write(page.Bytes())
		return
	}
	if err := report.WriteNoRun(s.Out, o.output, n); err != nil {
		fmt.Fprintf(s.Err, "dqbench: %v\n", err)
	}
}

// outputFlagsIn reads -o and --html from args as c would, leniently: an
// unknown flag, a bad value of another flag or a missing argument does
// not stop it.
func outputFlagsIn(c *cobra.Command, args []string) outputOptions {
	f := pflag.NewFlagSet(c.Name(), pflag.ContinueOnError)
	f.SetOutput(io.Discard)
	f.ParseErrorsAllowlist.UnknownFlags = true
	var o outputOptions
	addOutputFlags(f, &o)
	c.Flags().VisitAll(func(fl *pflag.Flag) {
		if f.Lookup(fl.Name) == nil && (fl.Shorthand == "" || f.ShorthandLookup(fl.Shorthand) == nil) {
			f.AddFlag(&pflag.Flag{Name: fl.Name, Shorthand: fl.Shorthand, NoOptDefVal: fl.NoOptDefVal, Value: anyValue{}})
		}
	})
	_ = f.Parse(args)
	return o
}

// anyValue takes any value: the flags outputFlagsIn does not read.
type anyValue struct{}

func (anyValue) String() string   { return "" }
func (anyValue) Set(string) error { return nil }
func (anyValue) Type() string     { return "string" }

// formatTitle is how a format is named in a sentence.
func formatTitle(format string) string {
	switch format {
	case "html":
		return "HTML"
	case "json":
		return "JSON"
	case "junit":
		return "JUnit"
	case "markdown":
		return "Markdown"
	}
	return format
}
