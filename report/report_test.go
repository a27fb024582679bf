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
	"unicode/utf8"

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
					MaxRedeliveryGap: check.Gap{D: 16364210 * time.Nanosecond, Intent: 112},
				},
				{
					Name: "split", Strategy: "dedup-table-split", Passed: false,
					Counts: check.Counts{
						Attempted: 1000, Acknowledged: 998, Indeterminate: 2, Delivered: 1000, Redelivered: 50,
						Effects: 950, Lost: 50, Unexpected: 1, DeadLettered: 3, FaultsInjected: 50,
					},
					LostByCause: map[string]int{"skipped": 50},
					Varies:      []check.Varies{{Count: "lost", Why: "how far the consumer got before each crash"}},
					MaxRedeliveryGap: check.Gap{D: 33793000 * time.Nanosecond, Intent: 8,
						Window: &check.Window{Key: "retention", D: time.Hour}},
					Expectations: []check.ExpectationResult{
						{Check: "lost == 0", Passed: false, Actual: 50},
					},
					Notes: []string{
						"50 intents were skipped as already processed but their effect never applied: the dedup marker was committed without the effect",
					},
				},
				{
					Name: "atomic", Strategy: "dedup-table", Passed: false,
					Counts:           check.Counts{Attempted: 1000, Acknowledged: 1000, Delivered: 1000, Effects: 1000},
					MaxRedeliveryGap: check.Gap{Window: &check.Window{Key: "ttl", D: time.Millisecond}},
					MaxRepublishGap: &check.Gap{D: 2006 * time.Millisecond, Intent: 360,
						Window: &check.Window{Key: "duplicate_window", D: time.Second}},
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
	for _, format := range report.FormatNames() {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			if err := report.Write(&buf, format, runs(), report.Options{}); err != nil {
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
	if err := report.Write(&def, "", runs(), report.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := report.Write(&table, "table", runs(), report.Options{}); err != nil {
		t.Fatal(err)
	}
	if def.String() != table.String() {
		t.Errorf("format \"\" differs from \"table\":\n%s\n---\n%s", def.String(), table.String())
	}
}

func TestWriteUnknownFormat(t *testing.T) {
	var buf bytes.Buffer
	err := report.Write(&buf, "yaml", runs(), report.Options{})
	if err == nil {
		t.Fatal("Write(yaml) succeeded, want an error")
	}
	for _, want := range append([]string{`"yaml"`}, report.FormatNames()...) {
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
	if err := report.Write(&buf, "json", runs(), report.Options{}); err != nil {
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
		if got, want := buf.String(), "{\n  \"schema_version\": 1,\n  \"passed\": true,\n  \"valid\": true,\n  \"runs\": []\n}\n"; got != want {
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

// quickstartRun is the shape of the built-in quickstart's judgement.
func quickstartRun() check.Run {
	v := func(name string, redelivered, effects, dups, lost int) check.Variant {
		return check.Variant{Name: name, Strategy: name, Passed: true, Counts: check.Counts{
			Attempted: 2000, Acknowledged: 2000, Delivered: 2000, Redelivered: redelivered,
			Effects: effects, Duplicates: dups, Lost: lost, FaultsInjected: redelivered,
		}, Expectations: []check.ExpectationResult{{Check: "lost == 0", Passed: lost == 0, Actual: lost}},
			Notes: []string{"91 consumer crashes, each followed by a replacement; the broker redelivers whatever a crashed consumer had not acked"}}
	}
	return check.Run{Meta: check.Meta{Scenario: "quickstart", Seed: 1, Messages: 2000, Broker: "kafka (embedded kfake)", Duration: time.Second},
		Passed: true, Variants: []check.Variant{v("none", 42, 2042, 42, 0), v("dedup-table", 42, 2000, 0, 0), v("dedup-table-split", 91, 1950, 0, 50)}}
}

// TestTableFitsTerminal: on an 80-column terminal no line is longer than
// 80, the lesson columns stay and the columns that differ stay; piped
// output (width 0) has the same table; --wide keeps every column, on a
// terminal or piped; colour only when asked.
func TestTableFitsTerminal(t *testing.T) {
	render := func(opts report.Options, rs ...check.Run) string {
		var buf bytes.Buffer
		if err := report.Write(&buf, "table", rs, opts); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	everyColumn := []string{"strategy"}
	for _, c := range check.Table {
		everyColumn = append(everyColumn, c.Column)
	}
	for _, tc := range []struct {
		name  string
		run   check.Run
		shown []string
	}{
		{"quickstart", quickstartRun(), []string{"variant", "redelivered", "effects", "duplicates", "lost", "faults"}},
		// split-crash's acked, indeterminate, unexpected and dead-lettered
		// differ between variants: they stay.
		{"differing", runs()[0], []string{"variant", "strategy", "redelivered", "duplicates", "lost", "acked", "indeterminate", "dead-lettered"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			narrow := render(report.Options{Width: 80}, tc.run)
			table := narrow
			if i := strings.Index(narrow, "\nPASS"); i > 0 {
				table = narrow[:i]
			}
			if tc.name == "quickstart" {
				for _, l := range strings.Split(narrow, "\n") {
					if n := utf8.RuneCountInString(l); n > 80 {
						t.Errorf("line of %d columns: %q", n, l)
					}
				}
				for _, hidden := range []string{"attempted", "acked", "indeterminate", "unexpected"} {
					if strings.Contains(table, hidden) {
						t.Errorf("narrow table shows %s:\n%s", hidden, narrow)
					}
				}
				if !strings.Contains(narrow, "--wide shows them") {
					t.Errorf("no hint about --wide:\n%s", narrow)
				}
			}
			for _, want := range tc.shown {
				if !strings.Contains(table, want) {
					t.Errorf("narrow table lacks %s:\n%s", want, narrow)
				}
			}
			if piped := render(report.Options{}, tc.run); tableOf(piped) != tableOf(narrow) {
				t.Errorf("piped table is not the 80-column one:\n%s\nwant:\n%s", piped, narrow)
			}
			for _, opts := range []report.Options{{Width: 80, Wide: true}, {Wide: true}} {
				out := render(opts, tc.run)
				for _, col := range everyColumn {
					if !strings.Contains(out, col) {
						t.Errorf("%+v: no column %s:\n%s", opts, col, out)
					}
				}
			}
			if strings.Contains(narrow, "\033[") {
				t.Error("colour without Color")
			}
		})
	}
	coloured := render(report.Options{Width: 200, Color: true}, quickstartRun())
	for _, want := range []string{"\033[31m42\033[0m", "\033[31m50\033[0m", "\033[32mPASS\033[0m"} {
		if !strings.Contains(coloured, want) {
			t.Errorf("coloured table lacks %q:\n%s", want, coloured)
		}
	}
	if strings.Contains(coloured, "\033[31m0\033[0m") {
		t.Errorf("a zero is coloured:\n%s", coloured)
	}
}
