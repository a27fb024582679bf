package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dqbench/dqbench/scenario"
)

func newValidateCmd(s Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check scenario files strictly, without a broker",
		Long: `Validate parses each scenario file strictly: an unknown key, a wrong type or a
bad value is reported as FILE:LINE:COL with what is allowed. Built-in names
are accepted too. Exit code 2 if any file is invalid.`,
		Example:           "  dqbench validate my-scenario.yaml\n  dqbench validate scenarios/*.yaml",
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeScenarios,
		RunE: func(c *cobra.Command, args []string) error {
			bad := 0
			for _, arg := range args {
				sc, err := scenario.ResolveContext(c.Context(), arg)
				if err != nil && c.Context().Err() != nil {
					return withCode(ExitIncomplete, fmt.Errorf("interrupted: %w", c.Context().Err()))
				}
				if err != nil {
					bad++
					fmt.Fprintln(s.Err, err)
					continue
				}
				for _, w := range sc.Warnings {
					fmt.Fprintln(s.Err, w)
				}
				fmt.Fprintf(s.Out, "%s: ok\n", arg)
			}
			if bad > 0 {
				return withCode(ExitUsage, fmt.Errorf("%d of %d scenario files invalid", bad, len(args)))
			}
			return nil
		},
	}
}
