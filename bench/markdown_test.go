package bench

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"
)

// table is one benchmark's result as Markdown: make bench prints it, and
// docs/performance.md holds these tables pasted, so no number there is
// typed by hand. Each row is a quantity measured once per pair
// (or round); the table gives its median, min and max, and the heading
// says when, on what and under what load.
type table struct {
	title, setup string
	start        time.Time
	loadStart    string
	rows         []tableRow
}

type tableRow struct {
	name string
	xs   []float64
}

// newTable starts a table: the date and the load average are taken now.
func newTable(title, setup string) *table {
	return &table{title: title, setup: setup, start: time.Now().UTC(), loadStart: loadAverage()}
}

// add appends a row: one value per pair, in any order.
func (t *table) add(name string, xs []float64) {
	t.rows = append(t.rows, tableRow{name, xs})
}

// print writes the table to w, with the load average at its end.
func (t *table) print(w io.Writer) {
	fmt.Fprintf(w, "\n#### %s\n\n%s Run %s, %s; load average %s at the start, %s at the end; %d CPUs, %s.\n\n",
		t.title, t.setup, t.start.Format("2006-01-02 15:04 MST"), time.Since(t.start).Round(time.Second),
		t.loadStart, loadAverage(), runtime.NumCPU(), runtime.Version())
	fmt.Fprintln(w, "| | median | min | max |")
	fmt.Fprintln(w, "|---|---:|---:|---:|")
	for _, r := range t.rows {
		if len(r.xs) == 0 {
			continue
		}
		s := spreadOf(r.xs)
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", r.name, number(s.median), number(s.min), number(s.max))
	}
	fmt.Fprintln(w)
}

// number prints a ratio with two decimals, a cost in ms with one, and a
// rate as a whole number with thousands separators.
func number(x float64) string {
	switch {
	case x < 10:
		return fmt.Sprintf("%.2f", x)
	case x < 100:
		return fmt.Sprintf("%.1f", x)
	}
	s := fmt.Sprintf("%.0f", x)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// loadAverage is the 1-minute load average ("?" where /proc has none).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "?"
}
