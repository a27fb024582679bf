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

	"github.com/dqbench/dqbench/catalog"
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
	// Width is the terminal's width: longer lines are wrapped to it. 0
	// (piped) keeps them whole.
	Width int
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
	out := lines{w: w, width: o.Width}
	out.say("    ", "%s · seed %d · %d messages per variant · %s", p.Bold(ansi.Inert(r.Meta.Scenario)), r.Meta.Seed, r.Meta.Messages, ansi.Inert(r.Meta.Broker))
	if in.Incomplete != "" {
		out.say("    ", "%s: %s", p.Red("INCOMPLETE"), ansi.Inert(in.Incomplete))
	}
	if o.Intent == 0 {
		for _, name := range names {
			writeAnomalies(out, p, in, name, o.Limit, filepath.Dir(r.HistoryPath))
		}
		return nil
	}
	return writeStories(out, p, r, in, names, o.Intent)
}

// lines writes lines wrapped to width (0: whole), each wrapped line's
// continuation starting with the indent given.
type lines struct {
	w     io.Writer
	width int
}

func (l lines) say(indent, format string, args ...any) {
	for _, s := range ansi.Wrap(fmt.Sprintf(format, args...), l.width, indent) {
		fmt.Fprintln(l.w, s)
	}
}

// command writes a command to copy after prefix on one line, or, when it
// does not fit, on lines of its own ending in " \" so that a shell still
// reads them as one.
func (l lines) command(prefix, cmd string) {
	if l.width <= 0 || ansi.Width(prefix+cmd) <= l.width {
		fmt.Fprintln(l.w, prefix+cmd)
		return
	}
	fmt.Fprintln(l.w, strings.TrimRight(prefix, " "))
	line := "    "
	for i, word := range strings.Fields(cmd) {
		if i > 0 && ansi.Width(line+" "+word+" \\") > l.width {
			fmt.Fprintln(l.w, line+" \\")
			line = "      "
		} else if i > 0 {
			line += " "
		}
		line += word
	}
	fmt.Fprintln(l.w, line)
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

func writeAnomalies(w lines, p ansi.Paint, in *check.Inspection, name string, limit int, dir string) {
	var v check.Variant
	for _, x := range in.Variants {
		if x.Name == name {
			v = x
		}
	}
	a := in.Anomalies(name, limit)
	fmt.Fprintln(w.w)
	summary := p.Green("no duplicates, nothing lost")
	if a.Total() > 0 {
		var parts []string
		if v.Duplicates > 0 {
			parts = append(parts, p.Yellow(plural(v.Duplicates, "duplicate", "duplicates")))
		}
		if v.Lost > 0 {
			parts = append(parts, p.Red(strconv.Itoa(v.Lost)+" lost"))
		}
		summary = strings.Join(parts, ", ")
	}
	w.say("    ", "%s (%s): %s", p.Bold(ansi.Inert(name)), ansi.Inert(v.Strategy), summary)
	for _, inv := range v.Invalid {
		w.say("    ", "  %s %s", p.Red("INVALID"), ansi.Inert(inv))
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
		w.say("    ", "  %s, %s: %s", kind, plural(n, "intent", "intents"), c.Doc(in.Broker))
		ids := make([]string, len(sample))
		for i, s := range sample {
			ids[i] = strconv.Itoa(s.Intent)
		}
		list := strings.Join(ids, ", ")
		if n > len(sample) {
			list += fmt.Sprintf(" … and %d more", n-len(sample))
		}
		for _, line := range wrap(list, idsWidth(w.width)) {
			fmt.Fprintf(w.w, "    %s\n", line)
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
		w.command("  one intent's story: ", fmt.Sprintf("dqbench explain %s --variant %s --intent %d", dir, name, first))
	}
}

func writeStories(w lines, p ansi.Paint, r savedrun.Run, in *check.Inspection, names []string, id int) error {
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
		writeStory(w, p, s, in.Broker)
	}
	return nil
}

func writeStory(w lines, p ansi.Paint, s *story.Story, on catalog.BrokerKind) {
	fmt.Fprintln(w.w)
	w.say("    ", "%s · intent %d", p.Bold(ansi.Inert(s.Variant)), s.Intent)
	steps := s.Steps()
	lane := 0
	for _, st := range steps {
		lane = max(lane, len(ansi.Inert(st.Lane)))
	}
	for _, st := range steps {
		text := ansi.Inert(st.Text)
		switch st.Type {
		case history.Fault, history.Crash:
			text = p.Red(text)
		}
		// A long step goes on under its text, past the time and lane.
		w.say(strings.Repeat(" ", 2+len(seconds(st.T))+2+lane+2), "  %s  %-*s  %s", seconds(st.T), lane, ansi.Inert(st.Lane), text)
	}
	if s.Truncated {
		w.say("    ", "  … (more events; only the first %d are kept)", story.MaxStoryEvents)
	}
	switch s.Verdict {
	case check.OK:
		w.say("    ", "  effect applied %s", plural(s.Applied, "time", "times"))
	default:
		w.say("    ", "  why: %s", s.Cause.Why(on))
	}
	w.say("    ", "  → %s", verdict(p, s.Verdict))
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

// idsWidth is how wide a list of intent ids may be, after its 4-space
// indent: 74 piped, less on a terminal narrower than 78 columns.
func idsWidth(width int) int {
	if width <= 0 {
		return 74
	}
	return max(10, min(74, width-4))
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
