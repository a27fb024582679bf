// Package html renders judged runs as one self-contained HTML page that
// teaches as well as reports: the scenario's lesson (its description) and
// each variant's verdict in one sentence first; then the counts as bars
// (duplicates and lost each on their own scale, their numbers large) with
// each expectation's verdict; a timeline per variant on one time axis
// (publishes, deliveries and effects, fault marks named by kind, consumers
// down shaded); the notes, one said of several variants said once; the
// stories of a sample of duplicated and lost intents as swimlanes; and the
// scenario as run. Inline SVG and CSS only: no script, nothing fetched.
// Nothing has a fixed width: a phone (390 px) shows what a laptop does.
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
	"strconv"
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
	// Lesson is the scenario's description: what the run shows, said
	// first on its page.
	Lesson string
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
	Lesson       string
	Said         []said // per variant, its verdict in one sentence
	Bars         []barGroup
	Timelines    []timeline
	YAxis        []ytick // the timelines' vertical scale, the same in every one
	Axis         []tick
	Bin          time.Duration
	Notes        []note
	Stories      []storyView
	Told         []who // per variant with anomalies, in order: "10 of 42" of them told
	ScenarioYAML string
	Counts       []countRow // every count, a row each, a column per variant
}

// said is a variant's verdict in one sentence: what it did to the
// intents and whether that is what the scenario expects.
type said struct {
	Variant, Strategy, Verdict, Text string
}

// sentence says v's verdict in one sentence.
func sentence(v check.Variant, messages int, judged bool) said {
	s := said{Variant: v.Name, Verdict: check.VerdictPass}
	if v.Strategy != v.Name {
		s.Strategy = v.Strategy
	}
	dup := "none applied twice"
	if n := v.Counts.Duplicates; n > 0 {
		dup = fmt.Sprintf("%d applied twice or more", n)
	}
	lost := "none lost"
	if n := v.Counts.Lost; n > 0 {
		lost = fmt.Sprintf("%d lost", n)
	}
	text := fmt.Sprintf("of %d intents, %s and %s", messages, dup, lost)
	if !judged {
		text = fmt.Sprintf("until the run was cut short, %s and %s", dup, lost)
	}
	var expected, broke []string
	for _, e := range v.Expectations {
		if e.Passed || e.Skipped {
			expected = append(expected, e.Check)
		} else {
			broke = append(broke, fmt.Sprintf("expected %s, got %d", e.Check, e.Actual))
		}
	}
	switch {
	case len(v.Invalid) > 0:
		s.Verdict = check.VerdictInvalid
		text += "; the experiment does not count: " + strings.Join(v.Invalid, "; ")
	case !judged:
		s.Verdict = check.VerdictIncomplete
		text += ": counts so far, not judged"
	case len(broke) > 0:
		s.Verdict = check.VerdictFail
		text += ", not as the scenario expects: " + strings.Join(broke, "; ")
	case len(expected) > 0:
		text += ", as the scenario expects (" + strings.Join(expected, ", ") + ")"
	}
	s.Text = text + "."
	return s
}

// countRow is one count of every variant, for the table of all counts.
type countRow struct {
	Column string
	Values []int
}

// note is a line of the "why" notes: one variant's, or one said once for
// every variant it is true of, each with its number.
type note struct {
	Who   []who
	Text  string
	Class string
}

type who struct {
	Variant, N string
}

// notes says each variant's notes, and a note that differs between
// variants only in its leading number (42 consumer crashes, ... in one,
// 91 consumer crashes, ... in another) once, with each variant's number.
func notes(vs []check.Variant) []note {
	var out []note
	at := map[string]int{}
	for _, v := range vs {
		for _, n := range v.Notes {
			num, rest := leadingNumber(n)
			if i, ok := at[rest]; ok && !slices.ContainsFunc(out[i].Who, func(w who) bool { return w.Variant == v.Name }) {
				out[i].Who = append(out[i].Who, who{v.Name, num})
				continue
			}
			at[rest] = len(out)
			out = append(out, note{Who: []who{{v.Name, num}}, Text: rest})
		}
	}
	for i, n := range out {
		if len(n.Who) == 1 && n.Who[0].N != "" { // said of one variant: as written
			out[i].Text = n.Who[0].N + " " + n.Text
			out[i].Who[0].N = ""
		}
	}
	return out
}

// leadingNumber splits "42 consumer crashes, ..." into "42" and the rest;
// a note without one is all rest.
func leadingNumber(s string) (string, string) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 || i == len(s) || s[i] != ' ' {
		return "", s
	}
	return s[:i], s[i+1:]
}

func newRunView(r Run) runView {
	rv := runView{Run: r.Judged, Verdict: r.Judged.Verdict(), Reasons: reasons(r.Judged), Lesson: r.Lesson, ScenarioYAML: r.Scenario}
	judgedToEnd := r.Judged.Incomplete == ""
	for _, v := range r.Judged.Variants {
		rv.Said = append(rv.Said, sentence(v, r.Judged.Messages, judgedToEnd))
	}
	rv.Bars = bars(r.Judged)
	rv.Notes = notes(r.Judged.Variants)
	for _, c := range check.Table {
		row := countRow{Column: c.Column}
		for _, v := range r.Judged.Variants {
			row.Values = append(row.Values, c.Value(v.Counts))
		}
		rv.Counts = append(rv.Counts, row)
	}
	if r.Story != nil {
		rv.Timelines, rv.YAxis, rv.Axis, rv.Bin = timelines(r.Story.Timeline)
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
			rv.Told = append(rv.Told, who{a.Variant, fmt.Sprintf("%d of %d", told, total)})
		}
	}
	return rv
}

// Geometry of a timeline's plot, in SVG units: the SVG stretches to the
// width of the page (preserveAspectRatio none, strokes that do not
// scale), so its text is HTML beside it, at the page's size.
const (
	plotW     = 1000.0
	plotH     = 100.0
	markTop   = 1.0  // fault marks: a band at the top
	markBot   = 13.0 //
	plotTop   = 17.0 // the highest count
	plotBot   = 98.0 // zero
	maxPoints = 50   // bins drawn per series: fewer, wider bins read from afar
)

type barGroup struct {
	Count string
	Scale string // what the longest bar stands for
	Own   bool   // duplicates and lost: on their own scale, the numbers large
	None  bool   // 0 in every variant: said in words, no bars
	Bars  []bar
}

type bar struct {
	Variant string
	Value   int
	Pct     string // the bar's length, in percent of its track
	Class   string
}

type timeline struct {
	Variant string
	Pub     string // publishes: the area's points
	Lines   []series
	Faults  []faultMark
	Kinds   string // the faults marked, by kind: "consumer-crash@before-ack ×42"
	Down    []rect
	More    int // faults past the marks kept
}

type series struct {
	Name, Class, Points string
}

type faultMark struct {
	X     string
	Title string
}

type rect struct {
	X, W  string
	Title string
}

type tick struct {
	Pct   string // from the left
	Label string
	Class string // first and last sit inside the plot
}

// ytick is a mark of the timelines' vertical scale: events per bin.
type ytick struct {
	Pct   string // from the top
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

// num is x with at most one decimal, for an attribute or a style.
func num(x float64) string { return strconv.FormatFloat(math.Round(x*10)/10, 'f', -1, 64) }

// barCounts are the counts drawn as bars, one group each.
var barCounts = []string{"duplicates", "lost", "effects", "redelivered"}

// ownScale are the counts each drawn on its own scale, the largest of
// the variants': 42 duplicates of 2,000 intents is the lesson, not a
// sliver.
var ownScale = map[string]bool{"duplicates": true, "lost": true}

func bars(r check.Run) []barGroup {
	// effects and redelivered share one scale: the intents per variant,
	// or the largest of those counts when one is larger (effects with
	// duplicates).
	shared := max(r.Messages, 1)
	for _, name := range barCounts {
		for _, v := range r.Variants {
			if n, _ := v.Counts.Get(name); !ownScale[name] {
				shared = max(shared, n)
			}
		}
	}
	var out []barGroup
	for _, name := range barCounts {
		g := barGroup{Count: name, Own: ownScale[name]}
		top := shared
		if g.Own {
			top = 0
			for _, v := range r.Variants {
				n, _ := v.Counts.Get(name)
				top = max(top, n)
			}
			g.Scale = fmt.Sprintf("on its own scale: the longest bar is %d", top)
			if top == 0 {
				g.Scale, g.None = "0 in every variant", true
			}
			top = max(top, 1)
		} else {
			g.Scale = fmt.Sprintf("of %d intents per variant", r.Messages)
			if shared > r.Messages {
				g.Scale = fmt.Sprintf("the longest bar is %d (%d intents per variant)", shared, r.Messages)
			}
		}
		for _, v := range r.Variants {
			n, _ := v.Counts.Get(name)
			class := "bar"
			if n > 0 && g.Own {
				class = "bar bad"
			}
			pct := float64(n) / float64(top) * 100
			if n > 0 {
				pct = max(pct, 0.5) // one of thousands still shows
			}
			g.Bars = append(g.Bars, bar{Variant: v.Name, Value: n, Pct: num(pct), Class: class})
		}
		out = append(out, g)
	}
	return out
}

// coarsen adds every k bins into one.
func coarsen(bins []int, k int) []int {
	out := make([]int, 0, (len(bins)+k-1)/k)
	for i := 0; i < len(bins); i += k {
		sum := 0
		for _, n := range bins[i:min(i+k, len(bins))] {
			sum += n
		}
		out = append(out, sum)
	}
	return out
}

func timelines(tl story.Timeline) ([]timeline, []ytick, []tick, time.Duration) {
	k := 1
	for _, s := range tl.Variants {
		k = max(k, (len(s.Publishes)+maxPoints-1)/maxPoints)
	}
	bin := tl.Bin * time.Duration(k)
	x := func(t time.Duration) float64 { return float64(t) / float64(tl.End) * plotW }
	pct := func(t time.Duration) string { return num(min(float64(t)/float64(tl.End)*100, 100)) }
	top := 1
	for _, s := range tl.Variants {
		for _, b := range [][]int{s.Publishes, s.Deliveries, s.Effect} {
			if c := coarsen(b, k); len(c) > 0 {
				top = max(top, slices.Max(c))
			}
		}
	}
	// One scale for every variant: n events in a bin stand sqrt(n/top)
	// of the way up.
	y := func(n int) float64 {
		return plotBot - math.Sqrt(float64(n)/float64(top))*(plotBot-plotTop)
	}
	yaxis := []ytick{{Pct: num(y(top)), Label: fmt.Sprint(top)}}
	if q := top / 4; q > 0 && q < top {
		yaxis = append(yaxis, ytick{Pct: num(y(q)), Label: fmt.Sprint(q)})
	}
	yaxis = append(yaxis, ytick{Pct: num(y(0)), Label: "0"})
	var out []timeline
	for _, s := range tl.Variants {
		t := timeline{Variant: s.Variant}
		points := func(bins []int) string {
			var pts strings.Builder
			for i, n := range coarsen(bins, k) {
				mid := bin*time.Duration(i) + bin/2
				fmt.Fprintf(&pts, "%s,%s ", num(x(min(mid, tl.End))), num(y(n)))
			}
			return pts.String()
		}
		// Publishes are an area from zero; deliveries and effects lines.
		t.Pub = fmt.Sprintf("0,%s %s%s,%s", num(plotBot), points(s.Publishes), num(plotW), num(plotBot))
		t.Lines = []series{
			{Name: "deliveries", Class: "del", Points: points(s.Deliveries)},
			{Name: "effects", Class: "eff", Points: points(s.Effect)},
		}
		var kinds []string
		perKind := map[string]int{}
		for _, m := range s.Faults {
			title := fmt.Sprintf("%s at %.3fs", m.Fault, m.T.Seconds())
			if m.Intent > 0 {
				title += fmt.Sprintf(" (intent %d)", m.Intent)
			}
			t.Faults = append(t.Faults, faultMark{X: num(x(m.T)), Title: title})
			if perKind[m.Fault] == 0 {
				kinds = append(kinds, m.Fault)
			}
			perKind[m.Fault]++
		}
		var said []string
		for _, f := range kinds {
			said = append(said, fmt.Sprintf("%s ×%d", f, perKind[f]))
		}
		t.Kinds = strings.Join(said, ", ")
		total := 0
		for _, n := range s.FaultsPerBin {
			total += n
		}
		t.More = total - len(s.Faults)
		for _, d := range s.Down {
			t.Down = append(t.Down, rect{X: num(x(d.From)), W: num(max(x(d.To)-x(d.From), 1)),
				Title: fmt.Sprintf("consumer %d down from %.3fs to %.3fs", d.Consumer, d.From.Seconds(), d.To.Seconds())})
		}
		out = append(out, t)
	}
	var axis []tick
	for i := range 5 {
		at := tl.End * time.Duration(i) / 4
		class := ""
		switch i {
		case 0:
			class = "first"
		case 4:
			class = "last"
		}
		axis = append(axis, tick{Pct: pct(at), Label: fmt.Sprintf("%.2fs", at.Seconds()), Class: class})
	}
	return out, yaxis, axis, bin
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
