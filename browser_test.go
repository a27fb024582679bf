package main

import (
	"bytes"
	"context"
	"flag"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/dqbench/dqbench/cmd"
)

var screenshot = flag.String("screenshot", "", "with TestHTMLReportInBrowser, save a PNG of the report's top to this file (docs/report.png)")

// browser finds a Chromium or Chrome to drive, "" when there is none.
func browser() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestHTMLReportInBrowser runs the quickstart for real (embedded Kafka, 400
// intents) with --html, loads the page in headless Chromium and checks, as
// a person would see it: no script error, nothing fetched from the network,
// every variant's timeline, fault marks, and a duplicate and a loss story.
func TestHTMLReportInBrowser(t *testing.T) {
	exe := browser()
	if exe == "" {
		t.Skip("no Chromium or Chrome found (install Debian's chromium: apt-get install -y chromium); skipping the browser test")
	}
	if testing.Short() {
		t.Skip("-short: skipping the real run and the browser")
	}
	page := filepath.Join(t.TempDir(), "report.html")
	var out, errOut bytes.Buffer
	code := cmd.Execute(t.Context(), []string{"run", "quickstart", "--messages", "400", "--html", page},
		cmd.Streams{In: strings.NewReader(""), Out: &out, Err: &errOut})
	if code != cmd.ExitPass {
		t.Fatalf("dqbench run quickstart --html: exit %d\n%s%s", code, out.String(), errOut.String())
	}

	ctx, problems := headless(t, exe, 1280, 1750, 90*time.Second)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	var err error
	must(chromedp.Do(ctx, chromedp.Navigate("file://"+page), chromedp.WaitVisible(chromedp.CSS("svg.timeline"))))
	count := func(selector string) int {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(`+strconv.Quote(selector)+`).length`))
		must(err)
		return n
	}
	variants, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("svg.timeline")].map(e => e.dataset.variant)`))
	must(err)
	duplicates := count(`details.story[data-verdict="duplicate"] table.lanes tr`)
	losses := count(`details.story[data-verdict="lost"] table.lanes tr`)
	marks := count(`svg.timeline .fault-mark`)
	title, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.title`))
	must(err)
	// A 1280 px window shows the page without scrolling sideways.
	overflow, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth - document.documentElement.clientWidth`))
	must(err)
	t.Logf("timelines %v; story rows: %d duplicate, %d lost; %d fault marks", variants, duplicates, losses, marks)
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	must(err)

	for _, p := range problems() {
		t.Error(p)
	}
	if want := []string{"none", "dedup-table", "dedup-table-split"}; !slices.Equal(variants, want) {
		t.Errorf("timelines of %v, want %v", variants, want)
	}
	if duplicates < 3 || losses < 3 {
		t.Errorf("story rows: %d for duplicates, %d for losses; want a story of each", duplicates, losses)
	}
	if overflow > 0 {
		t.Errorf("the page is %d px wider than a 1280 px window", overflow)
	}
	if marks == 0 || !strings.HasPrefix(title, "dqbench report") {
		t.Errorf("%d fault marks, title %q", marks, title)
	}
	if *screenshot != "" {
		if err := os.WriteFile(*screenshot, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSweepHTMLInBrowser runs a sweep of the quickstart for real (embedded
// Kafka, seeds 1..6, 100 intents) with a sweep expectation that seeds 2, 4
// and 5 miss, writes its --html page, and loads it in headless Chromium as
// a phone (390 px wide) and a laptop (1280 px) would show it: no script
// error, nothing fetched, nothing wider than the window, a histogram per
// count of every variant, the failing bars linked to the runs listed with
// their reproducers.
func TestSweepHTMLInBrowser(t *testing.T) {
	exe := browser()
	if exe == "" {
		t.Skip("no Chromium or Chrome found (install Debian's chromium: apt-get install -y chromium); skipping the browser test")
	}
	if testing.Short() {
		t.Skip("-short: skipping the real sweep and the browser")
	}
	page := filepath.Join(t.TempDir(), "sweep.html")
	var out, errOut bytes.Buffer
	code := cmd.Execute(t.Context(), []string{"sweep", "quickstart", "--seeds", "1..6", "--messages", "100", "--parallel", "2",
		"--expect", "none: duplicates <= 3 in at least 60% of runs", "--html", page},
		cmd.Streams{In: strings.NewReader(""), Out: &out, Err: &errOut})
	if code != cmd.ExitFail {
		t.Fatalf("dqbench sweep quickstart --html: exit %d, want %d\n%s%s", code, cmd.ExitFail, out.String(), errOut.String())
	}

	ctx, problems := headless(t, exe, 390, 844, 90*time.Second)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	var err error
	eval := func(js string) any {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[any](js))
		must(err)
		return v
	}

	for _, width := range []int64{390, 1280} {
		must(chromedp.Do(ctx, chromedp.EmulateViewport(width, 844), chromedp.Navigate("file://"+page), chromedp.WaitVisible(chromedp.CSS("svg.hist"))))
		// Nothing scrolls sideways: not the page, not a command.
		overflow, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth - document.documentElement.clientWidth`))
		must(err)
		if overflow > 0 {
			t.Errorf("at %d px the page is %d px wider than the window", width, overflow)
		}
		wide, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("body *")]
			.filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5 || e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX != "visible")
			.map(e => e.tagName + "." + (e.getAttribute("class") || "") + " " + (e.textContent || "").slice(0, 40))`))
		must(err)
		if len(wide) > 0 {
			t.Errorf("at %d px these stick out of the window or scroll sideways: %q", width, wide)
		}
		// Every histogram is drawn, within the window.
		hists, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`[...document.querySelectorAll("svg.hist")].map(e => e.getBoundingClientRect().width)`))
		must(err)
		for i, w := range hists {
			if w < 150 || w > float64(width) {
				t.Errorf("at %d px histogram %d is %.0f px wide", width, i, w)
			}
		}
		if len(hists) < 9 {
			t.Errorf("at %d px: %d histograms, want one per count shown of each of 3 variants", width, len(hists))
		}
	}

	variants, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("section.variant")].map(e => e.dataset.variant)`))
	must(err)
	if want := []string{"none", "dedup-table", "dedup-table-split"}; !slices.Equal(variants, want) {
		t.Errorf("sections of %v, want %v", variants, want)
	}
	// The runs listed are the three the sweep expectation missed, each
	// with its reproducer.
	runs, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("li.run")].map(e => e.id + " " + e.querySelector("pre.cmd").textContent)`))
	must(err)
	var want []string
	for _, seed := range []string{"2", "4", "5"} {
		want = append(want, "run-"+seed+" dqbench run quickstart --seed "+seed+" --messages 100")
	}
	if !slices.Equal(runs, want) {
		t.Errorf("runs listed %q, want %q", runs, want)
	}
	// Every link lands on an element; a red bar takes you to its run.
	if dangling := eval(`[...document.querySelectorAll('a[href^="#"]')].map(a => a.getAttribute("href")).filter(h => !document.getElementById(h.slice(1)))`); len(dangling.([]any)) > 0 {
		t.Errorf("links to nothing: %v", dangling)
	}
	bad, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('section[data-variant="none"] figure[data-count="duplicates"] a rect.hbar.bad').length`))
	must(err)
	if bad != 2 { // seeds 2 and 5 duplicated 4 intents, seed 4 five
		t.Errorf("none's duplicates: %d red bars, want 2 (at 4 and 5)", bad)
	}
	must(chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`section[data-variant="none"] figure[data-count="duplicates"] a`))))
	hash, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.hash`))
	must(err)
	if hash != "#run-2" {
		t.Errorf("the first red bar of none's duplicates goes to %q, want #run-2", hash)
	}

	for _, p := range problems() {
		t.Error(p)
	}
}

var (
	pagesFlag   = flag.String("pages", "", "with TestRunReportsInBrowser, check these comma-separated HTML pages (made by any dqbench) instead of running the built-ins")
	screenshots = flag.String("screenshots", "", "with TestRunReportsInBrowser, save each page at each width into this directory as 2000 px high PNG tiles (SCENARIO-WIDTH-N.png)")
)

// TestRunReportsInBrowser runs built-ins for real with --html (quickstart
// on embedded Kafka, nats-msg-id-dedup on embedded NATS, mqtt-client-qos2
// on embedded MQTT and, when a RabbitMQ answers on 127.0.0.1:5672,
// rabbitmq-quorum-acked-redelivery) and loads each page as a phone (390
// px wide) and a laptop (1280 px) show it: nothing sticks out of the
// window or scrolls sideways, the lesson (the scenario's description and
// each variant's verdict) comes before the charts, every timeline spans
// most of the window, and no timeline's label overlaps its scale.
func TestRunReportsInBrowser(t *testing.T) {
	exe := browser()
	if exe == "" {
		t.Skip("no Chromium or Chrome found (install Debian's chromium: apt-get install -y chromium); skipping the browser test")
	}
	if testing.Short() {
		t.Skip("-short: skipping the real runs and the browser")
	}
	var pages []string
	if *pagesFlag != "" {
		pages = strings.Split(*pagesFlag, ",")
	} else {
		scenarios := []string{"quickstart", "nats-msg-id-dedup", "mqtt-client-qos2"}
		if c, err := net.DialTimeout("tcp", "127.0.0.1:5672", time.Second); err == nil {
			c.Close()
			scenarios = append(scenarios, "rabbitmq-quorum-acked-redelivery")
		} else {
			t.Logf("no RabbitMQ on 127.0.0.1:5672 (%v): not checking rabbitmq-quorum-acked-redelivery's page", err)
		}
		dir := t.TempDir()
		for _, sc := range scenarios {
			page := filepath.Join(dir, sc+".html")
			var out, errOut bytes.Buffer
			code := cmd.Execute(t.Context(), []string{"run", sc, "--html", page},
				cmd.Streams{In: strings.NewReader(""), Out: &out, Err: &errOut})
			if code != cmd.ExitPass && code != cmd.ExitFail {
				t.Fatalf("dqbench run %s --html: exit %d\n%s%s", sc, code, out.String(), errOut.String())
			}
			pages = append(pages, page)
		}
	}

	ctx, problems := headless(t, exe, 390, 844, 3*time.Minute)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	for _, file := range pages {
		name := strings.TrimSuffix(filepath.Base(file), ".html")
		for _, width := range []int64{390, 1280} {
			abs, err := filepath.Abs(file)
			must(err)
			must(chromedp.Do(ctx, chromedp.EmulateViewport(width, 844), chromedp.Navigate("file://"+abs), chromedp.WaitVisible(chromedp.CSS("section.run"))))
			// Nothing scrolls sideways: not the page, not a table, not the scenario.
			overflow, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth - document.documentElement.clientWidth`))
			must(err)
			if overflow > 0 {
				t.Errorf("%s at %d px: the page is %d px wider than the window", name, width, overflow)
			}
			wide, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("body *")]
				.filter(e => { const r = e.getBoundingClientRect(); return r.width > 0 && (r.right > document.documentElement.clientWidth + 0.5 || r.left < -0.5)
					|| e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX != "visible" })
				.map(e => e.tagName + "." + (e.getAttribute("class") || "") + " " + (e.textContent || "").slice(0, 40))`))
			must(err)
			if len(wide) > 0 {
				t.Errorf("%s at %d px: these stick out of the window or scroll sideways: %q", name, width, wide[:min(len(wide), 12)])
			}
			// The lesson comes first: the description and a verdict per
			// variant, before any chart.
			lesson, err := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll("section.run")].map(run => {
				const l = run.querySelector("p.lesson"), s = run.querySelector("ul.said"), c = run.querySelector("figure, svg");
				if (!l || !s) return run.dataset.scenario + ": no lesson or no verdict sentences";
				if (c && !(l.compareDocumentPosition(c) & Node.DOCUMENT_POSITION_FOLLOWING)) return run.dataset.scenario + ": a chart comes before the lesson";
				if (s.querySelectorAll("li").length != run.querySelectorAll("svg.timeline").length) return run.dataset.scenario + ": not one verdict sentence per variant";
				return "";
			}).filter(p => p).join("; ")`))
			must(err)
			if lesson != "" {
				t.Errorf("%s at %d px: %s", name, width, lesson)
			}
			// Every timeline spans most of the window, and its label
			// does not overlap its scale's numbers.
			tl, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("svg.timeline")].flatMap(svg => {
				const out = [], w = svg.getBoundingClientRect().width, page = document.documentElement.clientWidth;
				if (w < page * 0.6) out.push(svg.dataset.variant + ": " + Math.round(w) + " px wide");
				const fig = svg.closest("figure");
				const label = fig && fig.querySelector("figcaption");
				const over = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
				for (const n of fig ? fig.querySelectorAll(".y span, text") : []) {
					if (label && over(label.getBoundingClientRect(), n.getBoundingClientRect())) out.push(svg.dataset.variant + ": its label overlaps " + n.textContent);
				}
				return out;
			})`))
			must(err)
			if len(tl) > 0 {
				t.Errorf("%s at %d px: timelines: %q", name, width, tl)
			}
			n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("svg.timeline").length`))
			must(err)
			if n == 0 {
				t.Errorf("%s at %d px: no timeline", name, width)
			}
			if *screenshots != "" {
				must(screenshotTiles(ctx, filepath.Join(*screenshots, name+"-"+strconv.FormatInt(width, 10)), width))
			}
		}
	}
	for _, p := range problems() {
		t.Error(p)
	}
}

// headless opens a page context in a headless Chromium (exe) of width ×
// height, ending after timeout, and collects what a self-contained page
// must not do: a script exception or console error, a browser error, a
// fetch of anything but file:// and data:. problems returns them.
func headless(t *testing.T, exe string, width, height int, timeout time.Duration) (ctx context.Context, problems func() []string) {
	t.Helper()
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(width, height))
	actx, cancelAlloc := chromedp.NewExecAllocator(t.Context(), opts...)
	t.Cleanup(cancelAlloc)
	var mu sync.Mutex
	var seen []string
	listen := func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			seen = append(seen, "script exception: "+e.ExceptionDetails.Text)
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				seen = append(seen, "console error")
			}
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError {
				seen = append(seen, "browser error: "+e.Entry.Text)
			}
		case *network.EventRequestWillBeSent:
			if !strings.HasPrefix(e.Request.URL, "file://") && !strings.HasPrefix(e.Request.URL, "data:") {
				seen = append(seen, "fetched "+e.Request.URL)
			}
		}
	}
	ctx, cancelCtx := chromedp.NewContext(actx, chromedp.WithListener(listen))
	t.Cleanup(cancelCtx)
	ctx, cancelTimeout := context.WithTimeout(ctx, timeout)
	t.Cleanup(cancelTimeout)
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, log.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, runtime.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

// screenshotTiles saves the page as PNGs of its width and 2000 px high,
// top to bottom: prefix-1.png, prefix-2.png, ...
func screenshotTiles(ctx context.Context, prefix string, width int64) error {
	height, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`document.documentElement.scrollHeight`))
	if err != nil {
		return err
	}
	for i, y := 1, 0.0; y < height; i, y = i+1, y+2000 {
		beyond := true
		shot, err := chromedp.Call(ctx, page.CaptureScreenshot, page.CaptureScreenshotParams{CaptureBeyondViewport: &beyond,
			Clip: &page.Viewport{X: 0, Y: y, Width: float64(width), Height: min(2000, height-y), Scale: 1}})
		if err != nil {
			return err
		}
		if err := os.WriteFile(prefix+"-"+strconv.Itoa(i)+".png", shot.Data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
