package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dqbench/dqbench/internal/buildinfo"
)

// versionLine is what dqbench --version and dqbench version print.
func versionLine() string {
	return fmt.Sprintf("dqbench %s (%s)", buildinfo.Version(), buildinfo.Go())
}

func newVersionCmd(s Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print dqbench's version, VCS revision and Go version",
		Long: `Version prints the module version, or for a build from a clone the VCS
revision dqbench was built from with the commit's time (+modified for
uncommitted changes), and the Go version. Every report and saved run
records the same, with the broker and the client libraries the run used
(provenance in the JSON and meta.json, properties in JUnit, the HTML
header). A build with no VCS stamp (go build -buildvcs=false) says
(devel); "make build" stamps one, in a linked git worktree too.`,
		Example: "  dqbench version\n  dqbench --version",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintln(s.Out, versionLine())
			return err
		},
	}
}
