package cmd

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dqbench/dqbench/scenario"
	"github.com/dqbench/dqbench/scenarios"
)

func newListCmd(s Streams) *cobra.Command {
	c := &cobra.Command{
		Use:     "list",
		Short:   "List the built-in scenarios (list faults: the fault types)",
		Example: "  dqbench list\n  dqbench list faults\n  dqbench list faults ack-lost",
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			w := tabwriter.NewWriter(s.Out, 0, 4, 2, ' ', 0)
			for _, name := range scenarios.Names() {
				sc, err := scenario.ResolveContext(c.Context(), name)
				if err != nil && c.Context().Err() != nil {
					return withCode(ExitIncomplete, fmt.Errorf("interrupted: %w", c.Context().Err()))
				}
				if err != nil {
					return withCode(ExitUsage, fmt.Errorf("built-in scenario %s: %w", name, err))
				}
				fmt.Fprintf(w, "%s\t%s\n", name, sc.Description)
			}
			return w.Flush()
		},
	}
	c.AddCommand(newListFaultsCmd(s))
	return c
}
