package cmd

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/dqbench/dqbench/savedrun"
)

func newCheckCmd(s Streams) *cobra.Command {
	var o outputOptions
	c := &cobra.Command{
		Use:   "check DIR",
		Short: "Re-judge a saved run from its history alone",
		Long: `Check reads a run saved with "dqbench run --out DIR" (its scenario, history and
store audit), counts again and prints the same report, with the same exit
codes as run. DIR may be one run's directory or the --out directory.`,
		Example: `  dqbench run quickstart --out runs/
  dqbench check runs/
  dqbench check runs/quickstart --html report.html
  dqbench check runs/ -o junit > dqbench-junit.xml`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := o.check(); err != nil {
				return err
			}
			dirs, err := savedrun.Find(args[0])
			if err != nil {
				return withCode(ExitUsage, err)
			}
			var runs []judged
			for _, dir := range dirs {
				j, err := judgeSaved(dir, o)
				if err != nil {
					return withCode(ExitUsage, fmt.Errorf("load run %s: %w", dir, err))
				}
				runs = append(runs, j)
			}
			if err := writeReports(s, o, runs); err != nil {
				return withCode(ExitIncomplete, err)
			}
			return verdict(judgedRuns(runs), nil, o.output == "table")
		},
	}
	addOutputFlags(c.Flags(), &o)
	c.ValidArgsFunction = completeDirs
	_ = c.RegisterFlagCompletionFunc("output", completeFormats)
	return c
}

// judgeSaved judges the run saved in dir from its files alone.
func judgeSaved(dir string, o outputOptions) (judged, error) {
	r, err := savedrun.Load(dir)
	if err != nil {
		return judged{}, err
	}
	f, err := os.Open(r.HistoryPath)
	if err != nil {
		return judged{}, err
	}
	defer f.Close()
	j, err := judgeHistory(f, r.Scenario, r.Meta, r.Audits, o)
	if err != nil {
		return judged{}, fmt.Errorf("%s: %w", r.HistoryPath, err)
	}
	return j, nil
}
