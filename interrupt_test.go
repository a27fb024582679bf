package main

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestInterruptedRunIsNotJudged: Ctrl-C (the run's context cancelled)
// mid-run leaves an INCOMPLETE report whose expectations say SKIP, never
// FAIL, with no loss in a variant that holds, and "dqbench check" on the
// saved run says the same (it reads the interrupt from the history).
func TestInterruptedRunIsNotJudged(t *testing.T) {
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(1500*time.Millisecond, cancel)
	code, stdout, stderr := dqbench(ctx, "run", "quickstart", "--messages", "200000", "--out", out)
	if code != 3 || !strings.Contains(stdout, "INCOMPLETE quickstart: interrupted") {
		t.Fatalf("exit %d, want 3 and INCOMPLETE\n%s\n%s", code, stdout, stderr)
	}
	judged := regexp.MustCompile(`(?m)^(PASS|FAIL|SKIP|INVALID) .*$`)
	lines := judged.FindAllString(stdout, -1)
	if len(lines) == 0 {
		t.Fatalf("no expectation lines:\n%s", stdout)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "SKIP ") {
			t.Errorf("%q: an interrupted run's expectations are not judged", l)
		}
	}
	if regexp.MustCompile(`why (none|dedup-table): \d+ intents lost`).MatchString(stdout) {
		t.Errorf("a variant that holds lost intents:\n%s", stdout)
	}
	code, again, _ := dqbench(context.Background(), "check", filepath.Join(out, "quickstart"))
	if code != 3 || strings.Join(judged.FindAllString(again, -1), "\n") != strings.Join(lines, "\n") {
		t.Errorf("check on the saved run: exit %d, want 3 and the same lines\n%s", code, again)
	}
}
