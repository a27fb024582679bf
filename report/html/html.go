// Package html renders judged runs as one self-contained HTML page: the
// counts as bars with each expectation's verdict, a timeline per variant on
// one time axis (fault marks, consumers down shaded), the stories of a
// sample of duplicated and lost intents as swimlanes, the notes, and the
// scenario as run. Inline SVG and CSS only: no script, nothing fetched.
//
// It only renders; package check judges and package story collects the
// timeline and the stories from the history.
package html

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/internal/buildinfo"
	"github.com/dqbench/dqbench/story"
)

// Run is one judged run with what the history showed of it.
type Run struct {
	Judged check.Run
	// Anomalies per variant, in the run's variant order.
	Anomalies []check.Anomalies
	// Story holds the timeline and the stories of sampled intents.
	Story *story.Collection
	// Scenario is the scenario as run, as YAML.
	Scenario string
	// Broker is the run's broker kind, whose words the stories' why use.
	Broker catalog.BrokerKind
}

//go:embed report.html.tmpl
var pageText string

//go:embed style.css
var style string

// Style is the style sheet of dqbench's HTML pages, a run's report's and
// a sweep's, for a <style> element.
func Style() template.CSS { return template.CSS(style) }

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"style":   Style,
	"seconds": func(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) },
	"ms":      func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) },
}).Parse(pageText))

// Write renders runs as an HTML page. Its headline is the runs' verdict,
// the word the exit code agrees with (the worst of the runs': ERROR,
// INCOMPLETE, INVALID, FAIL or PASS), followed by the reasons for it
// before any chart.
func Write(w io.Writer, runs []Run) error {
	v := view{Versions: versions()}
	var judged []check.Run
	for _, r := range runs {
		judged = append(judged, r.Judged)
		v.Reasons = append(v.Reasons, reasons(r.Judged)...)
		v.Runs = append(v.Runs, newRunView(r))
	}
	v.Verdict = check.Worst(judged)
	return page.Execute(w, v)
}

// NoRun renders the page of a command that judged no run: its verdict
// (INVALID for an invalid scenario or flag, exit code 2; ERROR when it
// stopped before it had a run to judge) and why, one problem a line.
func NoRun(w io.Writer, verdict, why string) error {
	v := view{Verdict: verdict, Versions: versions(), NothingRan: "Nothing ran: dqbench stopped before it had a run to judge."}
	if verdict == check.VerdictInvalid {
		v.NothingRan = "Nothing ran: the scenario or the flags are invalid (exit code 2); fix them and run again."
	}
	for _, l := range strings.Split(strings.TrimRight(why, "\n"), "\n") {
		v.Reasons = append(v.Reasons, reason{verdict, l})
	}
	return page.Execute(w, v)
}

type view struct {
	Verdict    string
	NothingRan string   // when no run was judged: why there is none
	Reasons    []reason // why the verdict is not PASS, every run's
	Versions   string
	Runs       []runView
}

// reason is one line saying why a run's verdict is not PASS.
type reason struct {
	Verdict, Text string
}

// reasons says why r's verdict is not PASS: why it could not run, why it
// was cut short, why an experiment does not count, which expectations did
// not hold.
func reasons(r check.Run) []reason {
	switch r.Verdict() {
	case check.VerdictError:
		return []reason{{check.VerdictError, fmt.Sprintf("scenario %s could not run: %s. Nothing ran: there are no counts, timelines or stories.", r.Scenario, r.Error)}}
	case check.VerdictIncomplete:
		return []reason{{check.VerdictIncomplete, fmt.Sprintf("scenario %s was cut short: %s. Its counts are what was recorded until then, not final.", r.Scenario, r.Incomplete)}}
	}
	var out []reason
	for _, v := range r.Variants {
		for _, inv := range v.Invalid {
			out = append(out, reason{check.VerdictInvalid, fmt.Sprintf("scenario %s, variant %s: the experiment does not count: %s", r.Scenario, v.Name, inv)})
		}
	}
	if len(out) > 0 {
		return out
	}
	for _, v := range r.Variants {
		for _, e := range v.Expectations {
			if !e.Passed && !e.Skipped {
				out = append(out, reason{check.VerdictFail, fmt.Sprintf("scenario %s, variant %s: expected %s, got %d", r.Scenario, v.Name, e.Check, e.Actual)})
			}
		}
	}
	return out
}

type runView struct {
	check.Run
	Verdict      string
	Reasons      []reason
	Bars         []barGroup
	Timelines    []timeline
	Axis         []tick
	Bin          time.Duration
	Stories      []storyView
	Shown        map[string]string // per variant: "10 of 42 duplicates shown"
	ScenarioYAML string
	Columns      []string
	Rows         [][]int
}

// Geometry of the charts, in SVG units.
const (
	chartW    = 900.0
	timelineH = 110.0
	barH      = 18.0
	labelW    = 150.0
)

type barGroup struct {
	Count string
	Bars  []bar
	H     float64
}

type bar struct {
	Variant string
	Value   int
	Y, W    float64
	Class   string
}

type timeline struct {
	Variant string
	YAxis   []ytick // the vertical scale, the same in every timeline
	Lines   []series
	Faults  []faultMark
	Down    []rect
	More    int // faults past the marks kept
}

type series struct {
	Name, Class, Points string
}

type faultMark struct {
	X     float64
	Title string
}

type rect struct {
	X, W  float64
	Title string
}

type tick struct {
	X      float64
	Label  string
	Anchor string // text-anchor: the last tick ends at its mark, inside the chart
}

// ytick is a mark of the timelines' vertical scale: events per bin.
type ytick struct {
	Y     float64
	Label string
}

type storyView struct {
	Variant string
	Intent  int
	Verdict string
	Cause   string
	Lanes   []string
	Steps   []stepView
	More    bool
}

type stepView struct {
	T     time.Duration
	Lane  int
	Text  string
	Class string
}

func newRunView(r Run) runView {
	rv := runView{Run: r.Judged, Verdict: r.Judged.Verdict(), Reasons: reasons(r.Judged), ScenarioYAML: r.Scenario, Shown: map[string]string{}}
	rv.Bars = bars(r.Judged)
	for _, c := range check.Table {
		rv.Columns = append(rv.Columns, c.Column)
	}
	for _, v := range r.Judged.Variants {
		row := make([]int, len(check.Table))
		for i, c := range check.Table {
			row[i] = c.Value(v.Counts)
		}
		rv.Rows = append(rv.Rows, row)
	}
	if r.Story != nil {
		rv.Timelines, rv.Axis = timelines(r.Story.Timeline)
		rv.Bin = r.Story.Timeline.Bin
		for _, s := range r.Story.Stories {
			rv.Stories = append(rv.Stories, newStoryView(s, r.Broker))
		}
	}
	for _, a := range r.Anomalies {
		told := 0
		for _, s := range rv.Stories {
			if s.Variant == a.Variant {
				told++
			}
		}
		if total := a.Total(); total > 0 {
			rv.Shown[a.Variant] = fmt.Sprintf("%d of %d anomalous intents told", told, total)
		}
	}
	return rv
}

// barCounts are the counts drawn as bars, one group each.
var barCounts = []string{"duplicates", "lost", "effects", "redelivered"}

func bars(r check.Run) []barGroup {
	// One scale for every bar: the intents per variant, or the largest
	// count when one is larger (effects with duplicates).
	top := max(r.Messages, 1)
	for _, name := range barCounts {
		for _, v := range r.Variants {
			n, _ := v.Counts.Get(name)
			top = max(top, n)
		}
	}
	var out []barGroup
	for _, name := range barCounts {
		g := barGroup{Count: name}
		for i, v := range r.Variants {
			n, _ := v.Counts.Get(name)
			class := "bar"
			if n > 0 && (name == "duplicates" || name == "lost") {
				class = "bar bad"
			}
			w := float64(n) / float64(top) * (chartW - labelW - 60)
			if n > 0 {
				w = max(w, 2) // one duplicate of thousands still shows
			}
			g.Bars = append(g.Bars, bar{Variant: v.Name, Value: n, Y: float64(i) * (barH + 4), W: w, Class: class})
		}
		g.H = float64(len(r.Variants)) * (barH + 4)
		out = append(out, g)
	}
	return out
}

func timelines(tl story.Timeline) ([]timeline, []tick) {
	x := func(t time.Duration) float64 {
		return labelW + float64(t)/float64(tl.End)*(chartW-labelW-10)
	}
	top := 1
	for _, s := range tl.Variants {
		for _, b := range [][]int{s.Publishes, s.Deliveries, s.Acks, s.Effect} {
			top = max(top, slices.Max(b))
		}
	}
	// One scale for every variant: n events in a bin stand sqrt(n/top)
	// of the way up.
	y := func(n int) float64 {
		return timelineH - 10 - math.Sqrt(float64(n)/float64(top))*(timelineH-25)
	}
	yaxis := []ytick{{Y: y(0), Label: "0"}}
	if q := top / 4; q > 0 && q < top {
		yaxis = append(yaxis, ytick{Y: y(q), Label: fmt.Sprint(q)})
	}
	yaxis = append(yaxis, ytick{Y: y(top), Label: fmt.Sprint(top)})
	var out []timeline
	for _, s := range tl.Variants {
		t := timeline{Variant: s.Variant, YAxis: yaxis}
		for _, line := range []struct {
			name, class string
			bins        []int
		}{
			{"publishes", "pub", s.Publishes}, {"deliveries", "del", s.Deliveries},
			{"acks", "ack", s.Acks}, {"effects", "eff", s.Effect},
		} {
			var pts strings.Builder
			for i, n := range line.bins {
				mid := tl.Bin*time.Duration(i) + tl.Bin/2
				fmt.Fprintf(&pts, "%.1f,%.1f ", x(mid), y(n))
			}
			t.Lines = append(t.Lines, series{Name: line.name, Class: line.class, Points: pts.String()})
		}
		for _, m := range s.Faults {
			title := fmt.Sprintf("%s at %.3fs", m.Fault, m.T.Seconds())
			if m.Intent > 0 {
				title += fmt.Sprintf(" (intent %d)", m.Intent)
			}
			t.Faults = append(t.Faults, faultMark{X: x(m.T), Title: title})
		}
		total := 0
		for _, n := range s.FaultsPerBin {
			total += n
		}
		t.More = total - len(s.Faults)
		for _, d := range s.Down {
			t.Down = append(t.Down, rect{X: x(d.From), W: max(x(d.To)-x(d.From), 1),
				Title: fmt.Sprintf("consumer %d down from %.3fs to %.3fs", d.Consumer, d.From.Seconds(), d.To.Seconds())})
		}
		out = append(out, t)
	}
	var axis []tick
	for i := range 6 {
		at := tl.End * time.Duration(i) / 5
		anchor := "middle"
		if i == 5 {
			anchor = "end"
		}
		axis = append(axis, tick{X: x(at), Label: fmt.Sprintf("%.2fs", at.Seconds()), Anchor: anchor})
	}
	return out, axis
}

func newStoryView(s *story.Story, on catalog.BrokerKind) storyView {
	sv := storyView{Variant: s.Variant, Intent: s.Intent, Verdict: string(s.Verdict), Cause: s.Cause.Why(on), More: s.Truncated}
	steps := s.Steps()
	// Lanes: producer, broker, each consumer in order of appearance, store.
	lanes := []string{"producer", "broker"}
	for _, st := range steps {
		if strings.HasPrefix(st.Lane, "consumer") && !slices.Contains(lanes, st.Lane) {
			lanes = append(lanes, st.Lane)
		}
	}
	lanes = append(lanes, "store")
	sv.Lanes = lanes
	for _, st := range steps {
		sv.Steps = append(sv.Steps, stepView{T: st.T, Lane: slices.Index(lanes, st.Lane), Text: st.Text, Class: string(st.Type)})
	}
	return sv
}

// versions names the build that rendered the report; each run's page
// says what it ran on (its provenance).
func versions() string {
	return "dqbench " + buildinfo.Version() + " · " + buildinfo.Go()
}
