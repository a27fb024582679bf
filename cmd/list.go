package cmd

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dqbench/dqbench/internal/ansi"
	"github.com/dqbench/dqbench/report"
	"github.com/dqbench/dqbench/scenario"
	"github.com/dqbench/dqbench/scenarios"
)

func newListCmd(s Streams) *cobra.Command {
	var wide bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List the built-in scenarios (list faults: the fault types)",
		Long: `List prints each built-in scenario's name and description in two columns,
one line each. Where that is wider than the terminal (or, piped, than 80
columns), each name stands on its own line with its description wrapped
under it, indented; --wide keeps one line each (for scripts: the names are
the first field).`,
		Example: "  dqbench list\n  dqbench list --wide | cut -d' ' -f1\n  dqbench list faults\n  dqbench list faults ack-lost",
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			var rows [][2]string
			for _, name := range scenarios.Names() {
				sc, err := scenario.ResolveContext(c.Context(), name)
				if err != nil && c.Context().Err() != nil {
					return withCode(ExitIncomplete, fmt.Errorf("interrupted: %w", c.Context().Err()))
				}
				if err != nil {
					return withCode(ExitUsage, fmt.Errorf("built-in scenario %s: %w", name, err))
				}
				rows = append(rows, [2]string{name, strings.Join(strings.Fields(sc.Description), " ")})
			}
			return writeList(s.Out, listWidth(s.Width, wide), rows)
		},
	}
	c.PersistentFlags().BoolVar(&wide, "wide", false, "one line per name, however wide (piped, lines are otherwise fitted to 80 columns)")
	c.AddCommand(newListFaultsCmd(s, &wide))
	return c
}

// listWidth is the width a list is fitted to: the terminal's, or piped
// (width 0) report.PipedWidth as the table is; none with --wide.
func listWidth(width int, wide bool) int {
	switch {
	case wide:
		return 0
	case width <= 0:
		return report.PipedWidth
	}
	return width
}

// writeList writes rows of a name and what it is: in two columns, one
// line each; on a terminal of width columns too narrow for that, each name
// on a line of its own and its description under it, indented and wrapped
// to fit.
func writeList(w io.Writer, width int, rows [][2]string) error {
	var table strings.Builder
	tw := tabwriter.NewWriter(&table, 0, 4, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", r[0], r[1])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if width <= 0 || ansi.Width(table.String()) <= width {
		_, err := io.WriteString(w, table.String())
		return err
	}
	var out strings.Builder
	for _, r := range rows {
		out.WriteString(r[0] + "\n")
		for _, l := range ansi.Wrap("    "+r[1], width, "    ") {
			out.WriteString(l + "\n")
		}
	}
	_, err := io.WriteString(w, out.String())
	return err
}
