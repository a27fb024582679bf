package scenario_test

import (
	"strings"
	"testing"

	"github.com/dqbench/dqbench/scenario"
)

// TestOnlyVariants: run --variant keeps the named variants in the
// scenario's order; an unknown name lists the variants, with a "did you
// mean".
func TestOnlyVariants(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  string
		err   string
	}{
		{names: []string{"dedup-table-split", "none"}, want: "none,dedup-table-split"},
		{names: []string{"dedup-table", "dedup-table"}, want: "dedup-table"},
		{names: []string{"none", "dedup-tabel", "x"}, err: `scenario quickstart has no variant "dedup-tabel" (did you mean "dedup-table"?), "x"; its variants: none, dedup-table, dedup-table-split`},
	} {
		s, err := scenario.Resolve("quickstart")
		if err != nil {
			t.Fatal(err)
		}
		err = s.OnlyVariants(tc.names)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%v: error %v, want %s", tc.names, err, tc.err)
			}
			if len(s.Variants) != 3 {
				t.Errorf("%v: a refused selection changed the variants", tc.names)
			}
			continue
		}
		var got []string
		for _, v := range s.Variants {
			got = append(got, v.Name)
		}
		if err != nil || strings.Join(got, ",") != tc.want {
			t.Errorf("%v: variants %v (err %v), want %s", tc.names, got, err, tc.want)
		}
	}
}
