package cmd

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/internal/strictyaml"
)

// newListFaultsCmd is "dqbench list faults [TYPE]": the fault types, or
// one of them whole, from the catalog.
func newListFaultsCmd(s Streams, wide *bool) *cobra.Command {
	return &cobra.Command{
		Use:   "faults [TYPE]",
		Short: "List the fault types, or describe one",
		Long: `Faults lists the fault types a scenario's faults can have, one line each.
With a TYPE it says what the fault does, what one count of faults_injected
is, its own keys, and on which broker kinds and modes it acts (and why not
elsewhere). docs/scenario.md has each fault's section.`,
		Example:           "  dqbench list faults\n  dqbench list faults ack-lost",
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeFaultTypes,
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				var rows [][2]string
				for _, f := range catalog.Faults {
					rows = append(rows, [2]string{string(f.Type), f.Doc})
				}
				return writeList(s.Out, listWidth(s.Width, *wide), rows)
			}
			f, ok := catalog.LookupFault(catalog.FaultType(args[0]))
			if !ok {
				hint := ""
				if near, ok := strictyaml.Suggest(args[0], catalog.FaultType("").Allowed()); ok {
					hint = fmt.Sprintf(" (did you mean %q?)", near)
				}
				return withCode(ExitUsage, fmt.Errorf("no fault type %q%s; the fault types: %s", args[0], hint, strings.Join(catalog.FaultType("").Allowed(), ", ")))
			}
			describeFault(wrapping(s.Out, listWidth(s.Width, *wide)), f)
			return nil
		},
	}
}

// describeFault writes what f does, its keys and where it acts.
func describeFault(w io.Writer, f catalog.Fault) {
	fmt.Fprintf(w, "%s: %s\n", f.Type, f.Doc)
	fmt.Fprintf(w, "one injection: %s\n", f.Injection)
	if f.NewParams != nil {
		fmt.Fprintln(w, "its keys (besides name, every, probability, max_attempt):")
		t := strictyaml.ReflectType(f.NewParams())
		for _, field := range strictyaml.Fields(t) {
			fmt.Fprintf(w, "  %s: %s\n", field.Name, schemaDescription(t.FieldByIndex(field.Index).Tag.Get("jsonschema")))
		}
	}
	fmt.Fprintln(w, "where it acts:")
	for _, b := range catalog.Brokers {
		for _, m := range b.Modes {
			where := catalog.Where{Broker: b.Kind, Mode: m, Acks: catalog.AcksAll}
			why := f.Available(where)
			if why == "" {
				why = "yes"
				where.ConsumerAck = catalog.AckAuto
				if auto := f.Available(where); b.AutoAck && auto != "" {
					why += "; not with consumer ack: auto (" + auto + ")"
				}
			}
			fmt.Fprintf(w, "  %s %s: %s\n", b.Kind, m, why)
		}
	}
	fmt.Fprintf(w, "docs: docs/scenario.md#%s\n", f.Type)
}

// schemaDescription is the description= part of a jsonschema tag.
func schemaDescription(tag string) string {
	_, d, ok := strings.Cut(tag, "description=")
	if !ok {
		return ""
	}
	return strings.ReplaceAll(d, `\,`, ",")
}

// completeFaultTypes offers the fault types, with what each does.
func completeFaultTypes(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, f := range catalog.Faults {
		if strings.HasPrefix(string(f.Type), toComplete) {
			out = append(out, cobra.CompletionWithDesc(string(f.Type), f.Doc))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
