package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dqbench/dqbench/scenario"
)

func newSchemaCmd(s Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of the scenario format",
		Long: `Schema prints a JSON Schema (draft 2020-12) of scenario files, so editors can
validate and autocomplete them. With the YAML language server, start a
scenario with:
  # yaml-language-server: $schema=./dqbench.schema.json`,
		Example: "  dqbench schema > dqbench.schema.json",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			b, err := scenario.Schema()
			if err != nil {
				return withCode(ExitIncomplete, err)
			}
			_, err = fmt.Fprintln(s.Out, string(b))
			return err
		},
	}
}
