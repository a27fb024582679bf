package html_test

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/report/html"
)

// judged is a run of one variant, none, that expects no loss, with meta
// and the variant changed by change.
func judged(change func(r *check.Run)) html.Run {
	r := check.Run{
		Meta:   check.Meta{Scenario: "quickstart", Seed: 1, Messages: 10, Broker: "kafka", Duration: time.Second},
		Passed: true,
		Variants: []check.Variant{{
			Name: "none", Strategy: "none", Passed: true,
			Counts:       check.Counts{Attempted: 10, Acknowledged: 10, Delivered: 10, Effects: 10},
			Expectations: []check.ExpectationResult{{Check: "lost == 0", Passed: true}},
		}},
	}
	change(&r)
	return html.Run{Judged: r, Scenario: "name: quickstart\n"}
}

var (
	h1       = regexp.MustCompile(`<h1>dqbench report <span class="verdict (\w+)">(\w+)</span></h1>`)
	firstLi  = regexp.MustCompile(`<ul class="reasons"><li><span class="\w+">(\w+)</span> ([^<]*)</li>`)
	barChart = `<figure class="bars`
)

// TestHeadline: the page's headline is the run's verdict, the word its
// exit code agrees with, and the reason comes first, before any chart; a
// run that could not start has no charts at all.
func TestHeadline(t *testing.T) {
	for _, tc := range []struct {
		name    string
		run     html.Run
		verdict string
		reason  string
		charts  bool
	}{
		{"unreachable broker", judged(func(r *check.Run) {
			r.Error = "broker unreachable: cannot reach Kafka at 127.0.0.1:1"
			r.Passed, r.Variants = false, nil
		}), "ERROR", "scenario quickstart could not run: broker unreachable: cannot reach Kafka at 127.0.0.1:1. Nothing ran: there are no counts, timelines or stories.", false},
		{"interrupted", judged(func(r *check.Run) {
			r.Incomplete = "interrupted (Ctrl-C): 4 of 10 publishes ended"
			r.Passed = false
		}), "INCOMPLETE", "scenario quickstart was cut short: interrupted (Ctrl-C): 4 of 10 publishes ended. Its counts are what was recorded until then, not final.", true},
		{"fault never fired", judged(func(r *check.Run) {
			r.Variants[0].Invalid = []string{"a configured fault never fired: consumer-crash@before-process"}
			r.Variants[0].Passed, r.Passed = false, false
		}), "INVALID", "scenario quickstart, variant none: the experiment does not count: a configured fault never fired: consumer-crash@before-process", true},
		{"expectation broken", judged(func(r *check.Run) {
			r.Variants[0].Counts.Lost = 3
			r.Variants[0].Expectations[0] = check.ExpectationResult{Check: "lost == 0", Actual: 3}
			r.Variants[0].Passed, r.Passed = false, false
		}), "FAIL", "scenario quickstart, variant none: expected lost == 0, got 3", true},
		{"pass", judged(func(*check.Run) {}), "PASS", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := html.Write(&buf, []html.Run{tc.run}); err != nil {
				t.Fatal(err)
			}
			page := buf.String()
			m := h1.FindStringSubmatch(page)
			if m == nil || m[1] != tc.verdict || m[2] != tc.verdict {
				t.Fatalf("headline %q, want %s", m, tc.verdict)
			}
			if !strings.Contains(page, "<title>dqbench report · "+tc.verdict+" · quickstart</title>") {
				t.Errorf("the title does not say %s", tc.verdict)
			}
			if !strings.Contains(page, `<h2>scenario quickstart <span class="verdict `+tc.verdict+`">`+tc.verdict+`</span></h2>`) {
				t.Errorf("the run's heading does not say %s", tc.verdict)
			}
			li := firstLi.FindStringSubmatchIndex(page)
			if tc.reason == "" {
				if li != nil {
					t.Errorf("a passing run with a reason: %s", page[li[0]:li[1]])
				}
			} else {
				if li == nil {
					t.Fatalf("no reason on the page:\n%s", page)
				}
				if got := page[li[2]:li[3]] + " " + page[li[4]:li[5]]; got != tc.verdict+" "+tc.reason {
					t.Errorf("first reason %q\nwant %q", got, tc.verdict+" "+tc.reason)
				}
				if c := strings.Index(page, barChart); c >= 0 && c < li[0] {
					t.Error("a chart comes before the reason")
				}
			}
			if got := strings.Contains(page, barChart); got != tc.charts {
				t.Errorf("charts shown: %v, want %v", got, tc.charts)
			}
			if !strings.Contains(page, "<pre class=\"scenario\">name: quickstart\n</pre>") {
				t.Error("the page lacks the scenario as run")
			}
		})
	}
}

// TestHeadlineOfSeveralRuns: the page of several runs says the worst
// verdict, and each run's section says its own and why.
func TestHeadlineOfSeveralRuns(t *testing.T) {
	pass := judged(func(*check.Run) {})
	failed := judged(func(r *check.Run) {
		r.Scenario = "other"
		r.Error = "broker unreachable"
		r.Passed, r.Variants = false, nil
	})
	var buf bytes.Buffer
	if err := html.Write(&buf, []html.Run{pass, failed}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if m := h1.FindStringSubmatch(page); m == nil || m[1] != "ERROR" {
		t.Errorf("headline %q, want ERROR", m)
	}
	for _, want := range []string{
		`<h2>scenario quickstart <span class="verdict PASS">PASS</span></h2>`,
		`<h2>scenario other <span class="verdict ERROR">ERROR</span></h2>`,
		`<ul class="reasons"><li><span class="ERROR">ERROR</span> scenario other could not run: broker unreachable.`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
}

// TestNoRun: the page of an invalid scenario (exit code 2) says INVALID
// and the error, FILE:LINE:COL first.
func TestNoRun(t *testing.T) {
	var buf bytes.Buffer
	why := "bad.yaml:5:1: unknown key \"stratgies\" at the top level\nno scenario file or built-in named \"quickstrat\""
	if err := html.NoRun(&buf, check.VerdictInvalid, why); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if m := h1.FindStringSubmatch(page); m == nil || m[1] != "INVALID" {
		t.Errorf("headline %q, want INVALID", m)
	}
	for _, want := range []string{
		`<title>dqbench report · INVALID</title>`,
		`<ul class="reasons"><li><span class="INVALID">INVALID</span> bad.yaml:5:1: unknown key &#34;stratgies&#34; at the top level</li><li>`,
		`the scenario or the flags are invalid (exit code 2)`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s:\n%s", want, page)
		}
	}
	if strings.Contains(page, "<section") {
		t.Error("a page of no run has a run's section")
	}
}

// TestLesson: the page says the scenario's lesson first, then each
// variant's verdict in one sentence, before any chart; duplicates and
// lost each have their own scale (42 of 2,000 is a full bar, not a
// sliver) and a count that is 0 everywhere is said in words; a note true
// of several variants but for its number is said once, and so is how many
// of each variant's anomalous intents are told; and no chart has
// a fixed width (a phone shows it whole).
func TestLesson(t *testing.T) {
	run := judged(func(r *check.Run) {
		r.Messages = 2000
		r.Variants = []check.Variant{
			{Name: "none", Strategy: "none", Passed: true,
				Counts:       check.Counts{Attempted: 2000, Effects: 2042, Duplicates: 42, Redelivered: 42},
				Expectations: []check.ExpectationResult{{Check: "duplicates > 0", Passed: true, Actual: 42}},
				Notes:        []string{"42 consumer crashes, each followed by a replacement", "42 intents had their effect applied more than once"}},
			{Name: "split", Strategy: "dedup-table-split",
				Counts:       check.Counts{Attempted: 2000, Effects: 1950, Lost: 50, Redelivered: 91},
				Expectations: []check.ExpectationResult{{Check: "lost == 0", Actual: 50}},
				Notes:        []string{"91 consumer crashes, each followed by a replacement"}},
		}
		r.Passed = false
	})
	run.Lesson = "Kafka consumer killed after the effect: none duplicates, split loses"
	run.Anomalies = []check.Anomalies{
		{Variant: "none", ByCause: map[check.Cause]int{"redelivered": 42}},
		{Variant: "split", ByCause: map[check.Cause]int{"skipped": 50}},
	}
	var buf bytes.Buffer
	if err := html.Write(&buf, []html.Run{run}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	order := []string{
		`<p class="lesson">Kafka consumer killed after the effect: none duplicates, split loses</p>`,
		`<li data-variant="none"><span class="PASS">PASS</span> <b>none</b>: of 2000 intents, 42 applied twice or more and none lost, as the scenario expects (duplicates &gt; 0).</li>`,
		`<li data-variant="split"><span class="FAIL">FAIL</span> <b>split</b> (strategy dedup-table-split): of 2000 intents, none applied twice and 50 lost, not as the scenario expects: expected lost == 0, got 50.</li>`,
		barChart,
	}
	at := 0
	for _, want := range order {
		i := strings.Index(page[at:], want)
		if i < 0 {
			t.Fatalf("page lacks, after what comes before it:\n%s\n\npage:\n%s", want, page)
		}
		at += i
	}
	for _, want := range []string{
		// each on its own scale: the largest of the variants' is a full bar
		`<div class="row" data-variant="none"><span class="name">none</span><span class="track"><span class="bar bad" style="width: 100%"`,
		`<div class="row" data-variant="split"><span class="name">split</span><span class="track"><span class="bar bad" style="width: 100%"`,
		// effects on the scale of all intents (the largest, 2042)
		`<span class="bar" style="width: 95.5%" title="split: 1950">`,
		// said once, with each variant's number
		`<li><b>none</b> 42, <b>split</b> 91: consumer crashes, each followed by a replacement</li>`,
		`<li><b>none</b>: 42 intents had their effect applied more than once</li>`,
		// which stories are told, said once for every variant
		`<p class="meta">Told here, of each variant's duplicated and lost intents (every cause, the lowest ids first): <b>none</b> 0 of 42, <b>split</b> 0 of 50.</p>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if n := strings.Count(page, "consumer crashes"); n != 1 {
		t.Errorf("the crash note is said %d times, want once", n)
	}
	if regexp.MustCompile(`<svg[^>]* width="\d`).MatchString(page) {
		t.Error("an SVG has a fixed width: it does not fit a phone")
	}

	cut := judged(func(r *check.Run) {
		r.Incomplete = "interrupted (Ctrl-C)"
		r.Variants[0].Counts.Duplicates = 3
		r.Variants[0].Expectations[0].Skipped, r.Variants[0].Expectations[0].Passed = true, false
	})
	buf.Reset()
	if err := html.Write(&buf, []html.Run{cut}); err != nil {
		t.Fatal(err)
	}
	if want := `<span class="INCOMPLETE">INCOMPLETE</span> <b>none</b>: until the run was cut short, 3 applied twice or more and none lost: counts so far, not judged.`; !strings.Contains(buf.String(), want) {
		t.Errorf("an interrupted run's sentence: page lacks %s", want)
	}

	none := judged(func(r *check.Run) {})
	buf.Reset()
	if err := html.Write(&buf, []html.Run{none}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `<figure class="bars own" data-count="lost"><figcaption><b>lost</b> <span class="meta">0 in every variant</span></figcaption>
</figure>`) {
		t.Errorf("lost, 0 in every variant, is not said in words:\n%s", buf.String())
	}
}
