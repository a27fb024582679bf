package main

import (
	"bytes"
	"context"
	"flag"
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

	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 1300))
	actx, cancel := chromedp.NewExecAllocator(t.Context(), opts...)
	defer cancel()
	var mu sync.Mutex
	var problems []string
	listen := func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			problems = append(problems, "script exception: "+e.ExceptionDetails.Text)
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				problems = append(problems, "console error")
			}
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError {
				problems = append(problems, "browser error: "+e.Entry.Text)
			}
		case *network.EventRequestWillBeSent:
			if !strings.HasPrefix(e.Request.URL, "file://") && !strings.HasPrefix(e.Request.URL, "data:") {
				problems = append(problems, "fetched "+e.Request.URL)
			}
		}
	}
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithListener(listen))
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	defer cancel()

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := chromedp.Call(ctx, network.Enable, network.EnableParams{})
	must(err)
	_, err = chromedp.Call(ctx, log.Enable, cdp.Empty{})
	must(err)
	_, err = chromedp.Call(ctx, runtime.Enable, cdp.Empty{})
	must(err)
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

	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
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
