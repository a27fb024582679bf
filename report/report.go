// Package report renders judged runs: a table for people, Markdown for CI
// summaries and JSON for scripts. It only renders; the numbers come from
// package check.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/dqbench/dqbench/check"
)

// Formats are the output formats -o accepts.
var Formats = []string{"table", "json", "markdown"}

// Write renders runs to w in format.
func Write(w io.Writer, format string, runs []check.Run) error {
	switch format {
	case "json":
		return JSON(w, runs)
	case "markdown":
		return Text(w, runs, true)
	case "table", "":
		return Text(w, runs, false)
	}
	return fmt.Errorf("unknown output format %q (allowed: %s)", format, strings.Join(Formats, ", "))
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
	Scenario   string          `json:"scenario"`
	Seed       int64           `json:"seed"`
	Broker     string          `json:"broker"`
	Messages   int             `json:"messages"`
	Passed     bool            `json:"passed"`
	DurationMS int64           `json:"duration_ms"`
	Incomplete string          `json:"incomplete,omitempty"`
	Variants   []check.Variant `json:"variants"`
}

// JSON writes {"passed": bool, "runs": [...]}.
func JSON(w io.Writer, runs []check.Run) error {
	out := struct {
		Passed bool      `json:"passed"`
		Runs   []jsonRun `json:"runs"`
	}{Passed: Passed(runs), Runs: []jsonRun{}}
	for _, r := range runs {
		vs := append([]check.Variant(nil), r.Variants...) // render, never change the input
		for i := range vs {
			if vs[i].Expectations == nil {
				vs[i].Expectations = []check.ExpectationResult{}
			}
		}
		out.Runs = append(out.Runs, jsonRun{
			Scenario: r.Scenario, Seed: r.Seed, Broker: r.Broker, Messages: r.Messages,
			Passed: r.Passed, DurationMS: r.Duration.Milliseconds(), Incomplete: r.Incomplete, Variants: vs,
		})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

// header is the variant's name and strategy, then a column per count.
var header = func() []string {
	h := []string{"variant", "strategy"}
	for _, c := range check.Table {
		h = append(h, c.Column)
	}
	return h
}()

// columnAlign left-aligns the names and right-aligns the counts.
var columnAlign = func() []tw.Align {
	a := make([]tw.Align, len(header))
	for i := range a {
		a[i] = tw.AlignRight
	}
	a[0], a[1] = tw.AlignLeft, tw.AlignLeft
	return a
}()

func row(v check.Variant) []string {
	out := []string{v.Name, v.Strategy}
	for _, c := range check.Table {
		out = append(out, strconv.Itoa(c.Value(v.Counts)))
	}
	return out
}

// Text writes one table per run followed by its verdict lines; markdown
// selects a Markdown table for CI summaries.
func Text(w io.Writer, runs []check.Run, markdown bool) error {
	for i, r := range runs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if markdown {
			fmt.Fprintf(w, "### %s\n\n", r.Scenario)
		} else {
			fmt.Fprintf(w, "scenario %s\n", r.Scenario)
		}
		opts := []tablewriter.Option{
			tablewriter.WithHeaderAutoFormat(tw.Off),
			tablewriter.WithRowAlignmentConfig(tw.CellAlignment{Global: tw.AlignRight, PerColumn: columnAlign}),
		}
		if markdown {
			opts = append(opts, tablewriter.WithRenderer(renderer.NewMarkdown()))
		}
		t := tablewriter.NewTable(w, opts...)
		t.Header(header)
		for _, v := range r.Variants {
			if err := t.Append(row(v)); err != nil {
				return err
			}
		}
		if err := t.Render(); err != nil {
			return err
		}
		if markdown {
			fmt.Fprintln(w)
		}
		bullet := ""
		if markdown {
			bullet = "- "
		}
		for _, v := range r.Variants {
			for _, e := range v.Expectations {
				fmt.Fprintf(w, "%s%s %s: %s (got %d)\n", bullet, verdict(e.Passed), v.Name, e.Check, e.Actual)
			}
			for _, p := range v.Invalid {
				fmt.Fprintf(w, "%sINVALID %s: %s\n", bullet, v.Name, p)
			}
		}
		for _, v := range r.Variants {
			for _, n := range v.Notes {
				fmt.Fprintf(w, "%swhy %s: %s\n", bullet, v.Name, n)
			}
		}
		if r.Incomplete != "" {
			fmt.Fprintf(w, "%sINCOMPLETE %s: %s\n", bullet, r.Scenario, r.Incomplete)
		}
		fmt.Fprintf(w, "%s%s  seed %d · %d messages per variant · %s · %s\n",
			bullet, verdict(r.Passed), r.Seed, r.Messages, r.Broker, r.Duration.Round(time.Millisecond))
	}
	return nil
}

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}
