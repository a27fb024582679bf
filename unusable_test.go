package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dqbench/dqbench/internal/testenv"
)

// TestUnusableStore: a store that cannot serve the run (PostgreSQL on a
// wrong port, a database that does not exist, no Redis) is checked before
// any variant starts and fails the run as an unreachable broker does: one
// ERROR line with the cause as it is and its fix, exit 3, "error" in the
// JSON, and no FAIL, INVALID or other variant's false cause.
func TestUnusableStore(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	pg := os.Getenv("DQBENCH_POSTGRES")
	if pg == "" {
		pg = "postgres://postgres@127.0.0.1:5432/test"
	}
	scenario := filepath.Join(t.TempDir(), "unusable.yaml")
	if err := os.WriteFile(scenario, []byte(`version: 1
name: unusable
messages: 200
broker: {kind: kafka}
faults:
  - {type: consumer-crash, at: after-effect-before-ack, every: 20}
variants:
  - {name: none, strategy: none, expect: {duplicates: ">0"}}
  - {name: dedup-table, strategy: dedup-table, expect: {duplicates: "0", lost: "0"}}
  - {name: setnx, strategy: redis-setnx}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name        string
		args        []string
		needsPG     bool
		cause       string // regexp, matching in the table and in JSON
		fix, notFix string
	}{
		{name: "postgres wrong port", args: []string{"--store", "postgres://postgres@" + closed + "/test"},
			cause: "cannot reach PostgreSQL at " + regexp.QuoteMeta(closed) + ": .*connection refused", fix: "start one"},
		{name: "missing database", args: []string{"--store", strings.TrimSuffix(pg, "/test") + "/dqbench_no_such_db"}, needsPG: true,
			cause: `database \\?"dqbench_no_such_db\\?" does not exist`, fix: "CREATE DATABASE dqbench_no_such_db", notFix: "start one"},
		{name: "no redis", args: []string{"--redis", "redis://" + closed},
			cause: "cannot reach Redis at " + regexp.QuoteMeta(closed) + ": .*connection refused", fix: "start one"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.needsPG {
				// -q says why on stderr, beside the verdict line
				if code, out, errOut := dqbench(context.Background(), "run", scenario, "--store", pg, "--messages", "20", "--variant", "none", "-q"); code == 3 && strings.Contains(out+errOut, "cannot reach") {
					testenv.Unavailable(t, "no PostgreSQL at %s: %s%s", pg, out, errOut)
				}
			}
			code, stdout, stderr := dqbench(context.Background(), append([]string{"run", scenario}, c.args...)...)
			all := stdout + stderr
			if code != 3 {
				t.Errorf("exit %d, want 3\n%s", code, all)
			}
			line := regexp.MustCompile(`(?m)^ERROR unusable: could not run: store unusable: .*` + c.cause + `.*$`).FindString(stdout)
			if line == "" {
				t.Fatalf("no ERROR line with the cause %q:\n%s", c.cause, all)
			}
			if !strings.Contains(line, c.fix) || c.notFix != "" && strings.Contains(line, c.notFix) {
				t.Errorf("ERROR line %q: want the fix %q, not %q", line, c.fix, c.notFix)
			}
			for _, wrong := range []string{"FAIL", "INVALID", "INCOMPLETE", "never fired", "drain gave up", "context canceled"} {
				if strings.Contains(all, wrong) {
					t.Errorf("output says %q:\n%s", wrong, all)
				}
			}
			if strings.TrimSpace(stderr) != "" {
				t.Errorf("stderr is not silent (the table says why):\n%s", stderr)
			}
			code, stdout, _ = dqbench(context.Background(), append([]string{"run", scenario, "-o", "json"}, c.args...)...)
			if code != 3 || !regexp.MustCompile(`"error": "store unusable: .*`+c.cause).MatchString(stdout) ||
				!strings.Contains(stdout, `"variants": []`) || strings.Contains(stdout, `"incomplete"`) {
				t.Errorf("-o json: exit %d, want 3 and an error with the cause %q, no variants, not incomplete:\n%s", code, c.cause, stdout)
			}
		})
	}
}
