package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dqbench/dqbench/report"
	"github.com/dqbench/dqbench/scenario"
)

func newSchemaCmd(s Streams) *cobra.Command {
	var output bool
	c := &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of the scenario format (--output: of the JSON report)",
		Long: `Schema prints a JSON Schema (draft 2020-12) of scenario files, so editors can
validate and autocomplete them. With the YAML language server, start a
scenario with:
  # yaml-language-server: $schema=./dqbench.schema.json

With --output it prints the JSON Schema of the JSON report instead (-o json,
--json FILE), whose schema_version says which shape a report has.`,
		Example: "  dqbench schema > dqbench.schema.json\n  dqbench schema --output > dqbench-report.schema.json",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			schema := scenario.Schema
			if output {
				schema = report.Schema
			}
			b, err := schema()
			if err != nil {
				return withCode(ExitIncomplete, err)
			}
			_, err = fmt.Fprintln(s.Out, string(b))
			return err
		},
	}
	c.Flags().BoolVar(&output, "output", false, "the JSON Schema of the JSON report (-o json), not of scenario files")
	return c
}
