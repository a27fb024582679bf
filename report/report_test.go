package report_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/report"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// runs is a fixed judgement: one failing run with a passing, a failing and an
// invalid variant, and one passing run without expectations.
func runs() []check.Run {
	return []check.Run{
		{
			Meta: check.Meta{
				Scenario: "split-crash", Seed: 42, Messages: 1000, Broker: "kafka",
				Duration: 3*time.Second + 456789*time.Microsecond,
			},
			Passed: false,
			Variants: []check.Variant{
				{
					Name: "naive", Strategy: "none", Passed: true,
					Counts: check.Counts{
						Attempted: 1000, Acknowledged: 1000, Delivered: 1000, Redelivered: 50,
						Effects: 1050, Duplicates: 50, FaultsInjected: 50,
					},
					Expectations: []check.ExpectationResult{
						{Check: "duplicates > 0", Passed: true, Actual: 50},
						{Check: "lost == 0", Passed: true, Actual: 0},
					},
					Notes: []string{
						"50 consumer crashes; the broker redelivered what they had not acked",
						"50 intents had their effect applied more than once: the strategy did not recognise the redelivery",
					},
				},
				{
					Name: "split", Strategy: "dedup-table-split", Passed: false,
					Counts: check.Counts{
						Attempted: 1000, Acknowledged: 998, Indeterminate: 2, Delivered: 1000, Redelivered: 50,
						Effects: 950, Lost: 50, Unexpected: 1, DeadLettered: 3, FaultsInjected: 50,
					},
					Expectations: []check.ExpectationResult{
						{Check: "lost == 0", Passed: false, Actual: 50},
					},
					Notes: []string{
						"50 intents were skipped as already processed but their effect never applied: the dedup marker was committed without the effect",
					},
				},
				{
					Name: "atomic", Strategy: "dedup-table", Passed: false,
					Counts:  check.Counts{Attempted: 1000, Acknowledged: 1000, Delivered: 1000, Effects: 1000},
					Invalid: []string{"a configured fault never fired: consumer-crash@before-process (raise messages or lower every/probability)"},
				},
			},
		},
		{
			Meta: check.Meta{
				Scenario: "quickstart", Seed: 1, Messages: 10, Broker: "kafka",
				Duration: 250*time.Millisecond + 400*time.Microsecond,
			},
			Passed: true,
			Variants: []check.Variant{
				{
					Name: "atomic", Strategy: "dedup-table", Passed: true,
					Counts: check.Counts{Attempted: 10, Acknowledged: 10, Delivered: 10, Effects: 10},
				},
			},
		},
	}
}

func TestWriteGolden(t *testing.T) {
	for _, format := range report.Formats {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			if err := report.Write(&buf, format, runs()); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", format+".golden")
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./report -update to create it)", err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("%s output differs from %s (run go test ./report -update if the change is intended)\n--- got\n%s\n--- want\n%s",
					format, golden, buf.String(), want)
			}
		})
	}
}

// The default format is the table.
func TestWriteDefaultFormat(t *testing.T) {
	var def, table bytes.Buffer
	if err := report.Write(&def, "", runs()); err != nil {
		t.Fatal(err)
	}
	if err := report.Write(&table, "table", runs()); err != nil {
		t.Fatal(err)
	}
	if def.String() != table.String() {
		t.Errorf("format \"\" differs from \"table\":\n%s\n---\n%s", def.String(), table.String())
	}
}

func TestWriteUnknownFormat(t *testing.T) {
	var buf bytes.Buffer
	err := report.Write(&buf, "yaml", runs())
	if err == nil {
		t.Fatal("Write(yaml) succeeded, want an error")
	}
	for _, want := range append([]string{`"yaml"`}, report.Formats...) {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	if buf.Len() != 0 {
		t.Errorf("Write(yaml) wrote %q", buf.String())
	}
}

func TestJSONKeys(t *testing.T) {
	var buf bytes.Buffer
	if err := report.Write(&buf, "json", runs()); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("JSON output does not parse: %v\n%s", err, buf.String())
	}

	// get walks doc along path: string keys index objects, ints index arrays.
	get := func(path ...any) any {
		t.Helper()
		var cur any = doc
		for i, p := range path {
			switch p := p.(type) {
			case string:
				obj, ok := cur.(map[string]any)
				if !ok {
					t.Fatalf("%v: not an object at %v", path, path[:i])
				}
				if cur, ok = obj[p]; !ok {
					t.Fatalf("%v: no key %q", path, p)
				}
			case int:
				arr, ok := cur.([]any)
				if !ok || p >= len(arr) {
					t.Fatalf("%v: no element %d at %v", path, p, path[:i])
				}
				cur = arr[p]
			}
		}
		return cur
	}

	tests := []struct {
		path []any
		want any
	}{
		{[]any{"passed"}, false},
		{[]any{"runs", 0, "scenario"}, "split-crash"},
		{[]any{"runs", 0, "seed"}, 42.0},
		{[]any{"runs", 0, "broker"}, "kafka"},
		{[]any{"runs", 0, "messages"}, 1000.0},
		{[]any{"runs", 0, "passed"}, false},
		{[]any{"runs", 0, "duration_ms"}, 3456.0},
		{[]any{"runs", 0, "variants", 0, "name"}, "naive"},
		{[]any{"runs", 0, "variants", 0, "strategy"}, "none"},
		{[]any{"runs", 0, "variants", 0, "passed"}, true},
		{[]any{"runs", 0, "variants", 0, "duplicates"}, 50.0},
		{[]any{"runs", 0, "variants", 0, "lost"}, 0.0},
		{[]any{"runs", 0, "variants", 0, "expectations", 0, "check"}, "duplicates > 0"},
		{[]any{"runs", 0, "variants", 0, "expectations", 0, "passed"}, true},
		{[]any{"runs", 0, "variants", 0, "expectations", 0, "actual"}, 50.0},
		{[]any{"runs", 0, "variants", 1, "lost"}, 50.0},
		{[]any{"runs", 0, "variants", 1, "dead_lettered"}, 3.0},
		{[]any{"runs", 0, "variants", 1, "expectations", 0, "passed"}, false},
		{[]any{"runs", 0, "variants", 2, "invalid", 0}, "a configured fault never fired: consumer-crash@before-process (raise messages or lower every/probability)"},
		{[]any{"runs", 1, "passed"}, true},
		{[]any{"runs", 1, "duration_ms"}, 250.0},
	}
	for _, tt := range tests {
		if got := get(tt.path...); got != tt.want {
			t.Errorf("%v = %#v, want %#v", tt.path, got, tt.want)
		}
	}

	// Every count is a top-level key of a variant (Counts is embedded).
	v := get("runs", 0, "variants", 0).(map[string]any)
	for _, k := range []string{
		"attempted", "acknowledged", "indeterminate", "delivered", "redelivered", "effects",
		"duplicates", "lost", "unexpected", "dead_lettered", "faults_injected",
	} {
		if _, ok := v[k]; !ok {
			t.Errorf("variant has no key %q: %v", k, v)
		}
	}
	// A variant without expectations has an empty list, not null.
	if exps, ok := get("runs", 1, "variants", 0, "expectations").([]any); !ok || len(exps) != 0 {
		t.Errorf("expectations of a variant without any = %#v, want []", get("runs", 1, "variants", 0, "expectations"))
	}
	// No notes or invalid: omitted.
	for _, k := range []string{"notes", "invalid"} {
		if _, ok := get("runs", 1, "variants", 0).(map[string]any)[k]; ok {
			t.Errorf("key %q present on a variant without any", k)
		}
	}
}

func TestJSONNoRuns(t *testing.T) {
	for _, in := range [][]check.Run{nil, {}} {
		var buf bytes.Buffer
		if err := report.JSON(&buf, in); err != nil {
			t.Fatal(err)
		}
		if got, want := buf.String(), "{\n  \"passed\": true,\n  \"runs\": []\n}\n"; got != want {
			t.Errorf("JSON(%#v) = %q, want %q", in, got, want)
		}
	}
}

func TestPassed(t *testing.T) {
	pass := check.Run{Passed: true}
	fail := check.Run{Passed: false}
	tests := []struct {
		name string
		runs []check.Run
		want bool
	}{
		{"none", nil, true},
		{"one passing", []check.Run{pass}, true},
		{"all passing", []check.Run{pass, pass, pass}, true},
		{"one failing", []check.Run{fail}, false},
		{"last failing", []check.Run{pass, pass, fail}, false},
		{"first failing", []check.Run{fail, pass}, false},
		{"fixture", runs(), false},
		{"fixture's passing run", runs()[1:], true},
	}
	for _, tt := range tests {
		if got := report.Passed(tt.runs); got != tt.want {
			t.Errorf("%s: Passed = %v, want %v", tt.name, got, tt.want)
		}
	}
}
