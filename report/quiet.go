package report

import (
	"fmt"
	"io"
	"time"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/internal/ansi"
)

// Verdicts writes one line per run, what "run --quiet" prints: the run's
// verdict (the word its exit code agrees with: PASS, FAIL, INVALID,
// INCOMPLETE or ERROR), the scenario's name, then the seed, messages,
// broker and duration as the table's last line has them. Colour with
// opts.Color; lines wrap to opts.Width.
func Verdicts(w io.Writer, runs []check.Run, opts Options) error {
	p := ansi.Paint(opts.Color)
	for _, r := range runs {
		l := fmt.Sprintf("%s %s  seed %d · %d messages per variant · %s", runVerdict(p, r), r.Scenario, r.Seed, r.Messages, r.Broker)
		if r.Error == "" {
			l += " · " + r.Duration.Round(time.Millisecond).String()
		}
		for _, s := range wrap(l, opts.Width) {
			if _, err := fmt.Fprintln(w, s); err != nil {
				return err
			}
		}
	}
	return nil
}
