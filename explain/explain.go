// Package explain tells, in the terminal, why a saved run's intents were
// duplicated or lost: the anomalous intents of each variant grouped by
// cause, or the life of one intent, one line per event.
package explain

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/internal/ansi"
	"github.com/dqbench/dqbench/savedrun"
	"github.com/dqbench/dqbench/story"
)

// Options select what to explain.
type Options struct {
	// Variant limits the explanation to one variant; empty for all.
	Variant string
	// Intent tells one intent's story; 0 lists the anomalous intents.
	Intent int
	// Limit is how many intent ids to list per cause (default 100).
	Limit int
	// Color adds ANSI colours (a terminal without NO_COLOR).
	Color bool
}

// ErrUsage marks a bad --variant or --intent.
var ErrUsage = errors.New("usage")

// Write explains the saved run r to w. It reads the history once for the
// judgement and, with Intent, a second time for the intent's events.
func Write(w io.Writer, r savedrun.Run, o Options) error {
	if o.Limit <= 0 {
		o.Limit = 100
	}
	variants := r.Scenario.Plan().Variants
	var names []string
	for _, v := range variants {
		names = append(names, v.Name)
	}
	if o.Variant != "" {
		if !slices.Contains(names, o.Variant) {
			return fmt.Errorf("%w: run %s has no variant %q (its variants: %s)", ErrUsage, r.Meta.Scenario, o.Variant, strings.Join(names, ", "))
		}
		names = []string{o.Variant}
	}
	if o.Intent < 0 {
		return fmt.Errorf("%w: --intent must be a positive intent id, got %d", ErrUsage, o.Intent)
	}
	in, err := inspect(r)
	if err != nil {
		return err
	}
	p := ansi.Paint(o.Color)
	fmt.Fprintf(w, "%s · seed %d · %d messages per variant · %s\n", p.Bold(r.Meta.Scenario), r.Meta.Seed, r.Meta.Messages, r.Meta.Broker)
	if in.Incomplete != "" {
		fmt.Fprintf(w, "%s: %s\n", p.Red("INCOMPLETE"), in.Incomplete)
	}
	if o.Intent == 0 {
		for _, name := range names {
			writeAnomalies(w, p, in, name, o.Limit, filepath.Dir(r.HistoryPath))
		}
		return nil
	}
	return writeStories(w, p, r, in, names, o.Intent)
}

func inspect(r savedrun.Run) (*check.Inspection, error) {
	f, err := os.Open(r.HistoryPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	in, err := check.Inspect(r.Scenario.Plan(), r.Meta, history.ScanRun(f, r.Meta.Messages), r.Audits)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.HistoryPath, err)
	}
	return in, nil
}

func writeAnomalies(w io.Writer, p ansi.Paint, in *check.Inspection, name string, limit int, dir string) {
	var v check.Variant
	for _, x := range in.Variants {
		if x.Name == name {
			v = x
		}
	}
	a := in.Anomalies(name, limit)
	fmt.Fprintf(w, "\n%s (%s): ", p.Bold(name), v.Strategy)
	if a.Total() == 0 {
		fmt.Fprintln(w, p.Green("no duplicates, nothing lost"))
	} else {
		var parts []string
		if v.Duplicates > 0 {
			parts = append(parts, p.Yellow(plural(v.Duplicates, "duplicate", "duplicates")))
		}
		if v.Lost > 0 {
			parts = append(parts, p.Red(strconv.Itoa(v.Lost)+" lost"))
		}
		fmt.Fprintln(w, strings.Join(parts, ", "))
	}
	for _, inv := range v.Invalid {
		fmt.Fprintf(w, "  %s %s\n", p.Red("INVALID"), inv)
	}
	for _, c := range check.Causes {
		n := a.ByCause[c]
		if n == 0 {
			continue
		}
		sample := a.Sample[c]
		kind := verdict(p, sample[0].Verdict)
		if where := c.Where(); where != "" {
			kind += " " + where
		}
		fmt.Fprintf(w, "  %s, %s: %s\n", kind, plural(n, "intent", "intents"), c.Doc())
		ids := make([]string, len(sample))
		for i, s := range sample {
			ids[i] = strconv.Itoa(s.Intent)
		}
		list := strings.Join(ids, ", ")
		if n > len(sample) {
			list += fmt.Sprintf(" … and %d more", n-len(sample))
		}
		for _, line := range wrap(list, 74) {
			fmt.Fprintf(w, "    %s\n", line)
		}
	}
	if a.Total() > 0 {
		first := 0
		for _, c := range check.Causes {
			if s := a.Sample[c]; len(s) > 0 {
				first = s[0].Intent
				break
			}
		}
		fmt.Fprintf(w, "  one intent's story: dqbench explain %s --variant %s --intent %d\n", dir, name, first)
	}
}

func writeStories(w io.Writer, p ansi.Paint, r savedrun.Run, in *check.Inspection, names []string, id int) error {
	var want []story.Want
	for _, name := range names {
		want = append(want, story.Want{Variant: name, IntentVerdict: in.Intent(name, id)})
	}
	f, err := os.Open(r.HistoryPath)
	if err != nil {
		return err
	}
	defer f.Close()
	col, err := story.Collect(history.ScanRun(f, r.Meta.Messages), names, in.End, 1, want)
	if err != nil {
		return fmt.Errorf("%s: %w", r.HistoryPath, err)
	}
	seen := false
	for _, s := range col.Stories {
		seen = seen || len(s.Events) > 0
	}
	if !seen {
		return fmt.Errorf("%w: intent %d does not appear in the history of %s (intents are numbered 1 to %d)", ErrUsage, id, r.Meta.Scenario, r.Meta.Messages)
	}
	for _, s := range col.Stories {
		writeStory(w, p, s)
	}
	return nil
}

func writeStory(w io.Writer, p ansi.Paint, s *story.Story) {
	fmt.Fprintf(w, "\n%s · intent %d\n", p.Bold(s.Variant), s.Intent)
	steps := s.Steps()
	lane := 0
	for _, st := range steps {
		lane = max(lane, len(st.Lane))
	}
	for _, st := range steps {
		text := st.Text
		switch st.Type {
		case history.Fault, history.Crash:
			text = p.Red(text)
		}
		fmt.Fprintf(w, "  %s  %-*s  %s\n", seconds(st.T), lane, st.Lane, text)
	}
	if s.Truncated {
		fmt.Fprintf(w, "  … (more events; only the first %d are kept)\n", story.MaxStoryEvents)
	}
	switch s.Verdict {
	case check.OK:
		fmt.Fprintf(w, "  effect applied %s\n", plural(s.Applied, "time", "times"))
	default:
		fmt.Fprintf(w, "  why: %s\n", s.Cause.Why())
	}
	fmt.Fprintf(w, "  → %s\n", verdict(p, s.Verdict))
}

// seconds formats an offset from the run's start, aligned: "  1.234567s".
func seconds(d time.Duration) string {
	return fmt.Sprintf("%10.6fs", d.Seconds())
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// wrap breaks a comma-separated list into lines of at most width.
func wrap(s string, width int) []string {
	var lines []string
	for len(s) > width {
		cut := strings.LastIndex(s[:width], " ")
		if cut <= 0 {
			break
		}
		lines = append(lines, s[:cut])
		s = s[cut+1:]
	}
	return append(lines, s)
}

func verdict(p ansi.Paint, v check.Verdict) string {
	switch v {
	case check.Duplicate:
		return p.Yellow(string(v))
	case check.Lost:
		return p.Red(string(v))
	}
	return p.Green(string(v))
}
