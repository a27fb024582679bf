package explain_test

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dqbench/dqbench/explain"
	"github.com/dqbench/dqbench/savedrun"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// testdata/quickstart is a real run: "dqbench run quickstart --messages 150
// --out testdata" (result.json left out). None duplicated intents 8, 53, 85
// and 122; dedup-table-split lost 35, 75 and 115.
func load(t *testing.T) savedrun.Run {
	t.Helper()
	r, err := savedrun.Load(filepath.Join("testdata", "quickstart"))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestGolden holds explain's output to the files in testdata/*.golden; run
// "go test ./explain -update" to rewrite them after a deliberate change.
func TestGolden(t *testing.T) {
	r := load(t)
	for _, tc := range []struct {
		name string
		opts explain.Options
		ends string // the last line, as the issue asks
	}{
		{"all", explain.Options{}, ""},
		{"split", explain.Options{Variant: "dedup-table-split"}, ""},
		{"lost-story", explain.Options{Variant: "dedup-table-split", Intent: 35}, "→ lost"},
		{"duplicate-story", explain.Options{Variant: "none", Intent: 8}, "→ duplicate"},
		{"ok-story", explain.Options{Variant: "dedup-table", Intent: 8}, "→ ok"},
		{"every-variant-story", explain.Options{Intent: 35}, "→ lost"},
		{"color", explain.Options{Variant: "none", Intent: 8, Color: true}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := explain.Write(&buf, r, tc.opts); err != nil {
				t.Fatal(err)
			}
			got := buf.String()
			if tc.ends != "" {
				lines := strings.Split(strings.TrimRight(got, "\n"), "\n")
				if last := strings.TrimSpace(lines[len(lines)-1]); last != tc.ends {
					t.Errorf("last line %q, want %q", last, tc.ends)
				}
			}
			if hasEscape := strings.Contains(got, "\033["); hasEscape != tc.opts.Color {
				t.Errorf("colour escapes present: %v, want %v", hasEscape, tc.opts.Color)
			}
			golden := filepath.Join("testdata", tc.name+".golden")
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s (run with -update if the change is deliberate)\ngot:\n%s\nwant:\n%s", golden, got, want)
			}
		})
	}
}

// TestListsEveryAnomaly: the listing names every duplicate and loss of the
// saved run, and its counts agree with the judgement.
func TestListsEveryAnomaly(t *testing.T) {
	var buf bytes.Buffer
	if err := explain.Write(&buf, load(t), explain.Options{}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"none (none): 4 duplicates", "8, 53, 85, 122", "dedup-table-split (dedup-table-split): 3 lost", "35, 75, 115", "dedup-table (dedup-table): no duplicates, nothing lost"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestErrors(t *testing.T) {
	r := load(t)
	for _, tc := range []struct {
		opts explain.Options
		want string
	}{
		{explain.Options{Variant: "nope"}, `no variant "nope" (its variants: none, dedup-table, dedup-table-split)`},
		{explain.Options{Intent: 100000}, "intent 100000 does not appear"},
		{explain.Options{Intent: -1}, "--intent must be a positive"},
	} {
		err := explain.Write(&bytes.Buffer{}, r, tc.opts)
		if !errors.Is(err, explain.ErrUsage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want ErrUsage with %q", tc.opts, err, tc.want)
		}
	}
}

// TestEscapesFromASavedRunAreInert: a saved run may come from anyone (a
// CI artifact); text in its history, meta or scenario that a terminal
// would act on (clear the screen, retitle the window, ring the bell) is
// printed escaped, never raw.
func TestEscapesFromASavedRunAreInert(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{savedrun.ScenarioFile, savedrun.HistoryFile, savedrun.AuditFile, savedrun.MetaFile} {
		b, err := os.ReadFile(filepath.Join("testdata", "quickstart", name))
		if err != nil {
			t.Fatal(err)
		}
		switch name {
		case savedrun.HistoryFile:
			b = bytes.ReplaceAll(b, []byte(`"pos":"0@`), []byte(`"pos":"\u001b[2J\u001b]0;pwned\u0007 0@`))
		case savedrun.MetaFile:
			b = bytes.Replace(b, []byte(`"broker": "kafka`), []byte(`"broker": "\u001b[31mkafka`), 1)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r, err := savedrun.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, opts := range []explain.Options{{}, {Variant: "dedup-table-split", Intent: 35}, {Intent: 8}} {
		var buf bytes.Buffer
		if err := explain.Write(&buf, r, opts); err != nil {
			t.Fatal(err)
		}
		got := buf.String()
		if strings.ContainsAny(got, "\x1b\x07") {
			t.Errorf("%+v: a raw escape reached the output:\n%q", opts, got)
		}
		if opts.Intent != 0 && !strings.Contains(got, `\x1b[2J\x1b]0;pwned\a 0@`) {
			t.Errorf("%+v: the position is not shown escaped:\n%s", opts, got)
		}
	}
}
