package catalog_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/dqbench/dqbench/catalog"
)

const (
	effectTableStart = "<!-- effect table: generated from catalog.Effects by `go test ./catalog -run TestEffectTable -update`; do not edit -->\n"
	effectTableEnd   = "<!-- end of the effect table -->\n"
)

// effectTable is the Markdown table of the effect kinds: what each does,
// whether applying it twice leaves what applying it once does, and what
// the audit counts per intent.
func effectTable() string {
	var b strings.Builder
	b.WriteString("| effect | what it does | naturally idempotent | the audit counts per intent |\n|---|---|---|---|\n")
	for _, e := range catalog.Effects {
		idem := "no"
		if e.Idempotent {
			idem = "yes"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", e.Kind, e.Doc, idem, e.Counted)
	}
	return b.String()
}

// TestEffectTable holds docs/scenario.md's table of effect kinds to the
// catalog: one fact, one place.
func TestEffectTable(t *testing.T) {
	b, err := os.ReadFile(docFile)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, effectTableStart)
	end := strings.Index(doc, effectTableEnd)
	if start < 0 || end < start {
		t.Fatalf("%s has no generated effect table (between %q and %q)", docFile, strings.TrimSpace(effectTableStart), strings.TrimSpace(effectTableEnd))
	}
	want := doc[:start] + effectTableStart + effectTable() + effectTableEnd + doc[end+len(effectTableEnd):]
	if want == doc {
		return
	}
	if *update {
		if err := os.WriteFile(docFile, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's effect table is not what the catalog says; run go test ./catalog -run TestEffectTable -update", docFile)
}
