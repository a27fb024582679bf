package cmd

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dqbench/dqbench/explain"
	"github.com/dqbench/dqbench/history"
	"github.com/dqbench/dqbench/savedrun"
)

func newExplainCmd(s Streams) *cobra.Command {
	var o explain.Options
	c := &cobra.Command{
		Use:   "explain DIR",
		Short: "Show why intents of a saved run were duplicated or lost",
		Long: `Explain reads a run saved with "dqbench run --out DIR" and lists, per variant,
the intents whose effect was duplicated or lost, grouped by cause. With
--intent it tells the life of one intent instead, one line per event with
its time (published, confirmed, delivered, effect applied, consumer crashed,
redelivered...), ending in "duplicate", "lost" or "ok".

Colour on a terminal; none when piped or with NO_COLOR set.`,
		Example: `  dqbench run quickstart --out runs/
  dqbench explain runs/quickstart
  dqbench explain runs/quickstart --variant dedup-table-split
  dqbench explain runs/quickstart --variant none --intent 8`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeDirs,
		RunE: func(_ *cobra.Command, args []string) error {
			dirs, err := savedrun.Find(args[0])
			if err != nil {
				return withCode(ExitUsage, err)
			}
			o.Color = s.color()
			o.Width = s.Width
			for i, dir := range dirs {
				r, err := savedrun.Load(dir)
				if err != nil {
					return withCode(ExitUsage, fmt.Errorf("load run %s: %w", dir, err))
				}
				if i > 0 {
					fmt.Fprintln(s.Out)
				}
				if err := explain.Write(s.Out, r, o); err != nil {
					if errors.Is(err, explain.ErrUsage) || errors.Is(err, history.ErrMalformed) {
						return withCode(ExitUsage, err)
					}
					return withCode(ExitIncomplete, fmt.Errorf("explain %s: %w", dir, err))
				}
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&o.Variant, "variant", "", "explain only this variant")
	f.IntVar(&o.Intent, "intent", 0, "tell the story of this intent (1-based id) instead of listing")
	return c
}
