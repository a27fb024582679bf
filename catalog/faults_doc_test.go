package catalog_test

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/dqbench/dqbench/catalog"
)

var update = flag.Bool("update", false, "rewrite the generated fault table in docs/scenario.md")

const (
	docFile    = "../docs/scenario.md"
	tableStart = "<!-- fault table: generated from catalog.Faults by `go test ./catalog -run TestFaultTable -update`; do not edit -->\n"
	tableEnd   = "<!-- end of the fault table -->\n"
)

// faultTable is the Markdown table of which fault type acts on which
// broker kind and mode, read from each fault's Available: a row per fault
// (linked to its section), a column per kind and mode this build has.
// "yes" marks where it acts with the kind's defaults; a footnote says where
// a producer's acks, the consumer's ack: auto or the kind's default
// settings stop it, in the catalog's own words; "–" where it cannot act at
// all.
func faultTable() string {
	type column struct {
		kind catalog.Broker
		mode catalog.Mode
	}
	var cols []column
	for _, b := range catalog.Brokers {
		for _, m := range b.Modes {
			cols = append(cols, column{b, m})
		}
	}
	var b strings.Builder
	b.WriteString("| fault |")
	for _, c := range cols {
		fmt.Fprintf(&b, " %s %s |", c.kind.Kind, c.mode)
	}
	b.WriteString("\n|---|")
	for range cols {
		b.WriteString(":---:|")
	}
	b.WriteString("\n")
	var notes []string
	note := func(text string) string {
		for i, n := range notes {
			if n == text {
				return fmt.Sprintf("<sup>%d</sup>", i+1)
			}
		}
		notes = append(notes, text)
		return fmt.Sprintf("<sup>%d</sup>", len(notes))
	}
	for _, f := range catalog.Faults {
		fmt.Fprintf(&b, "| [`%s`](#%s) |", f.Type, f.Type)
		for _, c := range cols {
			where := catalog.Where{Broker: c.kind.Kind, Mode: c.mode, Acks: catalog.AcksAll}
			if f.Available(where) != "" {
				b.WriteString(" – |")
				continue
			}
			cell := "yes"
			for _, a := range catalog.AcksLevels {
				w := where
				w.Acks = a
				if why := f.Available(w); why != "" {
					cell += note(fmt.Sprintf("not with `acks: %s`: %s", a, why))
				}
			}
			if c.kind.AutoAck {
				w := where
				w.ConsumerAck = catalog.AckAuto
				if why := f.Available(w); why != "" {
					cell += note(fmt.Sprintf("not with consumer `ack: auto`: %s", why))
				}
			}
			if c.kind.NewSettings != nil {
				w := where
				w.Settings = c.kind.NewSettings()
				if why := f.Available(w); why != "" {
					cell += note(fmt.Sprintf("not with the %s defaults: %s", c.kind.Kind, why))
				}
				if _, proxied := w.Settings.(interface{ UseToxiproxy(string) }); proxied && f.InProcessToxiproxy {
					cell += note("not with `--toxiproxy`: it is a protocol-aware toxic in dqbench's in-process toxiproxy, and an external toxiproxy runs only its own toxics")
				}
			}
			fmt.Fprintf(&b, " %s |", cell)
		}
		b.WriteString("\n")
	}
	if len(notes) > 0 {
		b.WriteString("\n")
		for i, n := range notes {
			fmt.Fprintf(&b, "- <sup>%d</sup> %s.\n", i+1, n)
		}
	}
	return b.String()
}

// TestFaultTable holds docs/scenario.md's table of which fault acts where
// to the catalog: one fact, one place.
func TestFaultTable(t *testing.T) {
	b, err := os.ReadFile(docFile)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, tableStart)
	end := strings.Index(doc, tableEnd)
	if start < 0 || end < start {
		t.Fatalf("%s has no generated fault table (between %q and %q)", docFile, strings.TrimSpace(tableStart), strings.TrimSpace(tableEnd))
	}
	want := doc[:start] + tableStart + faultTable() + tableEnd + doc[end+len(tableEnd):]
	if want == doc {
		return
	}
	if *update {
		if err := os.WriteFile(docFile, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's fault table is not what the catalog says; run go test ./catalog -run TestFaultTable -update", docFile)
}

// TestREADMELinksFaultTable: the README points at the table rather than
// listing fault types by hand.
func TestREADMELinksFaultTable(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "(docs/scenario.md#which-fault-acts-where)") {
		t.Error("README.md does not link to docs/scenario.md#which-fault-acts-where")
	}
}

// TestFaultSections: every fault type in the table has a section of its
// own in docs/scenario.md for the row's link to land on.
func TestFaultSections(t *testing.T) {
	b, err := os.ReadFile(docFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range catalog.Faults {
		if !strings.Contains(string(b), "\n### "+string(f.Type)+"\n") {
			t.Errorf("%s has no section \"### %s\"", docFile, f.Type)
		}
	}
}
