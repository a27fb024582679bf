package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/report"
	"github.com/dqbench/dqbench/savedrun"
)

func newCheckCmd(s Streams) *cobra.Command {
	var output string
	c := &cobra.Command{
		Use:   "check DIR",
		Short: "Re-judge a saved run from its history alone",
		Long: `Check reads a run saved with "dqbench run --out DIR" (its scenario, history and
store audit), counts again and prints the same report, with the same exit
codes as run. DIR may be one run's directory or the --out directory.`,
		Example: "  dqbench run quickstart --out runs/\n  dqbench check runs/",
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			dirs, err := savedrun.Find(args[0])
			if err != nil {
				return withCode(ExitUsage, err)
			}
			var runs []check.Run
			for _, dir := range dirs {
				r, err := savedrun.Load(dir)
				if err != nil {
					return withCode(ExitUsage, fmt.Errorf("load run %s: %w", dir, err))
				}
				judged, err := r.Judge()
				if err != nil {
					return withCode(ExitUsage, fmt.Errorf("load run %s: %w", dir, err))
				}
				runs = append(runs, judged)
			}
			if err := report.Write(s.Out, output, runs); err != nil {
				return withCode(ExitIncomplete, err)
			}
			return verdict(runs, nil)
		},
	}
	addOutputFlag(c.Flags(), &output)
	return c
}
