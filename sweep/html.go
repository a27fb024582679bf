package sweep

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/internal/buildinfo"
	"github.com/dqbench/dqbench/report/html"
)

//go:embed sweep.html.tmpl
var htmlText string

var htmlPage = template.Must(template.New("sweep").Funcs(template.FuncMap{"style": html.Style}).Parse(htmlText))

// HTML writes the summary as one self-contained page, styled as a run's
// HTML report: the verdict and why first; per variant and count min,
// median, p99 and max and a histogram of the runs by value, the bars of
// failing runs marked and linked to them; each expectation and sweep
// expectation; then every run that did not pass or that a failed sweep
// expectation missed, with the command that runs it again. Inline SVG and
// CSS only: no script, nothing fetched.
func HTML(w io.Writer, s Summary) error {
	v := htmlView{Summary: s, Header: header(s), Footer: footer(s), Versions: "dqbench " + buildinfo.Version() + " · " + buildinfo.Go()}
	runs := map[RunID]*htmlRun{}
	runOf := func(id RunID) *htmlRun {
		r := runs[id]
		if r == nil {
			r = &htmlRun{RunID: id, Anchor: runAnchor(id, s.Repeat), Name: runName(id, s.Repeat)}
			runs[id] = r
		}
		return r
	}
	for _, f := range s.Failures {
		r := runOf(f.RunID)
		r.Verdict, r.Reproduce, r.Saved = f.Verdict, f.Reproduce, f.Saved
		r.Problems = append(r.Problems, f.Problems...)
	}
	for _, vs := range s.Variants {
		for _, e := range vs.SweepExpectations {
			if e.Passed {
				continue
			}
			for _, m := range e.Missed {
				r := runOf(m.RunID)
				if r.Verdict == "" {
					r.Verdict = check.VerdictPass
				}
				r.Reproduce = m.Reproduce
				r.Problems = append(r.Problems, fmt.Sprintf("%s: %s %d, and the sweep expects %s", vs.Name, countOf(e.Check), m.Got, e.Check))
			}
		}
	}
	for _, id := range slices.SortedFunc(func(yield func(RunID) bool) {
		for id := range runs {
			if !yield(id) {
				return
			}
		}
	}, RunID.compare) {
		v.Runs = append(v.Runs, *runs[id])
	}
	v.Reasons = htmlReasons(s)
	for _, vs := range s.Variants {
		vv := htmlVariant{Name: vs.Name, Strategy: vs.Strategy, Runs: vs.Runs, Varies: strings.Join(vs.Varies, ", ")}
		for _, e := range vs.Expectations {
			verdict := check.VerdictPass
			if e.Failed > 0 {
				verdict = check.VerdictFail
			}
			vv.Lines = append(vv.Lines, htmlLine{Verdict: verdict, Text: strings.TrimPrefix(strings.TrimPrefix(expectationLine(e), "PASS "), "FAIL ")})
		}
		for _, e := range vs.SweepExpectations {
			verdict := check.VerdictPass
			if !e.Passed {
				verdict = check.VerdictFail
			}
			vv.Lines = append(vv.Lines, htmlLine{Verdict: verdict, Text: strings.TrimPrefix(strings.TrimPrefix(sweepExpectationLine(e), "PASS "), "FAIL ")})
		}
		for _, c := range shown(vs, s.Messages) {
			vv.Counts = append(vv.Counts, histogram(c, failingRuns(s, vs, c.Name), s.Repeat))
		}
		v.Variants = append(v.Variants, vv)
	}
	for _, m := range s.Moved {
		v.Moved = append(v.Moved, fmt.Sprintf("seed %d: %s %s: %s", m.Seed, m.Variant, m.Count, joinInts(m.Values)))
	}
	return htmlPage.Execute(w, v)
}

type htmlView struct {
	Summary
	Header, Footer string
	Versions       string
	Reasons        []htmlLine
	Variants       []htmlVariant
	Runs           []htmlRun
	Moved          []string
}

// htmlLine is a line with a verdict word before it.
type htmlLine struct{ Verdict, Text string }

type htmlVariant struct {
	Name, Strategy string
	Runs           int
	Varies         string
	Lines          []htmlLine
	Counts         []htmlCount
}

// htmlRun is a run listed on the page: it did not pass, or a failed sweep
// expectation missed it.
type htmlRun struct {
	RunID
	Anchor, Name, Verdict string
	Problems              []string
	Reproduce, Saved      string
}

// htmlCount is one count of a variant: its numbers and its histogram.
type htmlCount struct {
	CountSummary
	Column  string
	Bars    []htmlBar
	YMax    int    // runs at the tallest bar
	Lo, Hi  string // the values at the axis' ends
	Failing []failingRun
	More    int // failing runs not listed
}

type htmlBar struct {
	X, Y, W, H string
	Title      string
	Class      string
	Href       string // the first failing run in the bar, when there is one
	// Label is the bar's value under it, when every bar has one; LabelX
	// its middle.
	Label, LabelX string
}

// failingRun is a run whose count fails an expectation on it.
type failingRun struct {
	RunID
	Anchor, Name string
	Got          int
}

// Geometry of a histogram, in SVG units: the plot spans x from histL to
// histR and y from histTop to histBase.
const (
	histW, histH    = 320.0, 112.0
	histL, histR    = 30.0, 312.0
	histTop         = 8.0
	histBase        = 88.0
	histBins        = 40
	histLabels      = 12 // at most this many bars are labelled one by one
	histBarMax      = 48.0
	htmlFailingRuns = 20
)

// histogram draws c's runs by value: one bar per value when at most
// histBins values span min to max, else per equal range of values; a bar
// with a failing run is marked and links to the first.
func histogram(c CountSummary, failing []failingRun, repeat int) htmlCount {
	hc := htmlCount{CountSummary: c, Column: column(c.Name)}
	slices.SortFunc(failing, func(x, y failingRun) int { return x.compare(y.RunID) })
	hc.Failing = failing
	if len(failing) > htmlFailingRuns {
		hc.Failing, hc.More = failing[:htmlFailingRuns], len(failing)-htmlFailingRuns
	}
	if len(c.Values) == 0 {
		return hc
	}
	lo, hi := c.Values[0][0], c.Values[len(c.Values)-1][0]
	span := hi - lo + 1
	per := (span + histBins - 1) / histBins
	n := (span + per - 1) / per
	runs := make([]int, n)
	for _, vr := range c.Values {
		runs[(vr[0]-lo)/per] += vr[1]
	}
	hc.YMax = slices.Max(runs)
	if n > histLabels {
		hc.Lo, hc.Hi = strconv.Itoa(lo), strconv.Itoa(hi)
	}
	step := (histR - histL) / float64(n)
	w := min(step-1, histBarMax)
	for i, r := range runs {
		if r == 0 {
			continue
		}
		from, to := lo+i*per, min(lo+(i+1)*per-1, hi)
		label := strconv.Itoa(from)
		if to > from {
			label = fmt.Sprintf("%d to %d", from, to)
		}
		h := float64(r) / float64(hc.YMax) * (histBase - histTop)
		mid := histL + (float64(i)+0.5)*step
		b := htmlBar{X: svgNum(mid - w/2), W: svgNum(max(w, 1)), Y: svgNum(histBase - h), H: svgNum(h), Class: "hbar",
			Title: fmt.Sprintf("%s %s: %s", c.Name, label, plural(r, "run"))}
		if n <= histLabels {
			b.Label, b.LabelX = label, svgNum(mid)
		}
		var seeds []string
		for _, f := range failing {
			if f.Got >= from && f.Got <= to {
				if b.Href == "" {
					b.Href = "#" + f.Anchor
				}
				seeds = append(seeds, runName(f.RunID, repeat))
			}
		}
		if len(seeds) > 0 {
			b.Class = "hbar bad"
			b.Title += fmt.Sprintf("; failing: %s", strings.Join(seeds, ", "))
		}
		hc.Bars = append(hc.Bars, b)
	}
	return hc
}

// svgNum is x with at most one decimal, for an SVG attribute.
func svgNum(x float64) string { return strconv.FormatFloat(math.Round(x*10)/10, 'f', -1, 64) }

// plural is "1 run", "3 runs".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// gotRE finds the value a failed expectation got: "none: lost == 0 (got 2)".
var gotRE = regexp.MustCompile(`\(got (-?[0-9]+)\)$`)

// failingRuns are the runs whose count of variant v fails an expectation
// on it: a run's expectation (from the failures' problems), or a failed
// sweep expectation (the runs it missed).
func failingRuns(s Summary, v VariantSummary, count string) []failingRun {
	var out []failingRun
	seen := map[RunID]bool{}
	add := func(id RunID, got int) {
		if !seen[id] {
			seen[id] = true
			out = append(out, failingRun{RunID: id, Anchor: runAnchor(id, s.Repeat), Name: runName(id, s.Repeat), Got: got})
		}
	}
	for _, f := range s.Failures {
		for _, p := range f.Problems {
			if m := gotRE.FindStringSubmatch(p); m != nil && strings.HasPrefix(p, v.Name+": "+count+" ") {
				got, _ := strconv.Atoi(m[1])
				add(f.RunID, got)
			}
		}
	}
	for _, e := range v.SweepExpectations {
		if !e.Passed && countOf(e.Check) == count {
			for _, m := range e.Missed {
				add(m.RunID, m.Got)
			}
		}
	}
	return out
}

// runAnchor is the id of a run's entry on the page.
func runAnchor(id RunID, repeat int) string {
	if repeat > 1 {
		return fmt.Sprintf("run-%d-%d", id.Seed, id.Repeat)
	}
	return fmt.Sprintf("run-%d", id.Seed)
}

// htmlReasons say why the sweep's verdict is not PASS, before any chart.
func htmlReasons(s Summary) []htmlLine {
	var out []htmlLine
	for _, v := range s.Variants {
		for _, e := range v.SweepExpectations {
			if !e.Passed {
				out = append(out, htmlLine{check.VerdictFail, fmt.Sprintf("variant %s: the sweep expects %s; it %s", v.Name, e.Check, heldIn(e))})
			}
		}
		for _, e := range v.Expectations {
			if e.Failed > 0 {
				out = append(out, htmlLine{check.VerdictFail, fmt.Sprintf("variant %s: %s", v.Name, strings.TrimPrefix(expectationLine(e), "FAIL "))})
			}
		}
	}
	for _, verdict := range check.Verdicts {
		if n := s.Verdicts[verdict]; n > 0 && verdict != check.VerdictPass && verdict != check.VerdictFail {
			out = append(out, htmlLine{verdict, fmt.Sprintf("%d of %d runs: %s (listed below, not counted in the distributions)", n, s.Runs, verdictWhy[verdict])})
		}
	}
	if len(s.MissingShards) > 0 {
		out = append(out, htmlLine{check.VerdictIncomplete, "shards not merged: " + strings.Join(s.MissingShards, ", ")})
	}
	if s.Interrupted {
		out = append(out, htmlLine{check.VerdictIncomplete, fmt.Sprintf("the sweep was interrupted: %d of %d runs finished", s.Finished, s.Runs)})
	} else if s.Finished < s.Runs && len(s.MissingShards) == 0 {
		out = append(out, htmlLine{check.VerdictIncomplete, fmt.Sprintf("%d of %d runs finished", s.Finished, s.Runs)})
	}
	return out
}

var verdictWhy = map[string]string{
	check.VerdictError:      "could not start",
	check.VerdictIncomplete: "were cut short",
	check.VerdictInvalid:    "do not count (a fault that never fired)",
}
