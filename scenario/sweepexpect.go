package scenario

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/dqbench/dqbench/internal/strictyaml"
	"github.com/dqbench/dqbench/plan"
)

// SweepExpectation is a check over the runs of a sweep ("dqbench sweep"),
// not over one run: a comparison on one count that must hold in every
// run, or in at least a share of them ("duplicates > 0 in at least 95%
// of runs"). "dqbench run" does not read it.
//
// In YAML it is an expectation as expect takes (a number, or a string
// such as ">0"), meaning in every run, or that string followed by "in
// every run" or "in at least P% of runs".
type SweepExpectation struct {
	// Each is the comparison each run's count is held to.
	Each Expectation
	// Milli is the share of the runs it must hold in, in thousandths of a
	// percent: 100000 is every run, 95000 at least 95 %.
	Milli int
}

// EveryRun is SweepExpectation.Milli for "in every run".
const EveryRun = 100000

// sweepExpectationRE matches the string form: a comparison, then
// optionally "in every run" or "in at least P% of runs" (P up to three
// decimals).
var sweepExpectationRE = regexp.MustCompile(`^\s*((?:==|!=|>=|<=|>|<)?\s*[0-9]+)(?:\s+in\s+(?:(every\s+run|all\s+runs)|at\s+least\s+([0-9]{1,3}(?:\.[0-9]{1,3})?)\s*%(?:\s+of\s+(?:the\s+)?runs)?))?\s*$`)

const sweepExpectationHelp = `write a comparison and the runs it must hold in, like "== 0 in every run" or "> 0 in at least 95% of runs" (a comparison alone means in every run)`

// ParseSweepExpectation parses the string form: "0", "== 0 in every run",
// "> 0 in at least 95% of runs", ">0 in at least 99.5%".
func ParseSweepExpectation(s string) (SweepExpectation, error) {
	m := sweepExpectationRE.FindStringSubmatch(s)
	if m == nil {
		return SweepExpectation{}, fmt.Errorf("bad sweep expectation %s: %s", echo(s), sweepExpectationHelp)
	}
	each, err := ParseExpectation(m[1])
	if err != nil {
		return SweepExpectation{}, fmt.Errorf("bad sweep expectation %s: %v", echo(s), err)
	}
	x := SweepExpectation{Each: each, Milli: EveryRun}
	if m[3] != "" {
		whole, frac, _ := strings.Cut(m[3], ".")
		frac = (frac + "000")[:3]
		w, _ := strconv.Atoi(whole)
		f, _ := strconv.Atoi(frac)
		x.Milli = w*1000 + f
		if x.Milli <= 0 || x.Milli > EveryRun {
			return SweepExpectation{}, fmt.Errorf("bad sweep expectation %s: the share of runs must be above 0%% and at most 100%%", echo(s))
		}
	}
	return x, nil
}

// String renders the expectation as "== 0 in every run" or "> 0 in at
// least 95% of runs".
func (x SweepExpectation) String() string {
	if x.Milli >= EveryRun || x.Milli <= 0 {
		return x.Each.String() + " in every run"
	}
	pct := strconv.Itoa(x.Milli / 1000)
	if f := x.Milli % 1000; f != 0 {
		pct += strings.TrimRight(fmt.Sprintf(".%03d", f), "0")
	}
	return x.Each.String() + " in at least " + pct + "% of runs"
}

// HoldsOver reports whether the comparison, holding in held of runs
// runs, held in enough of them. No runs is not enough.
func (x SweepExpectation) HoldsOver(held, runs int) bool {
	return runs > 0 && int64(held)*EveryRun >= int64(x.Milli)*int64(runs)
}

// MarshalText renders the expectation as in String.
func (x SweepExpectation) MarshalText() ([]byte, error) { return []byte(x.String()), nil }

// UnmarshalText parses the string form (see ParseSweepExpectation).
func (x *SweepExpectation) UnmarshalText(b []byte) error {
	y, err := ParseSweepExpectation(string(b))
	if err != nil {
		return err
	}
	*x = y
	return nil
}

// UnmarshalYAMLScalar reads a sweep expectation for the strict decoder:
// an integer (== n in every run) or the string form.
func (x *SweepExpectation) UnmarshalYAMLScalar(v strictyaml.ScalarValue) error {
	if !v.IsString && !v.IsInt {
		return &strictyaml.WrongType{Want: `a comparison and the runs it must hold in (e.g. 0, "> 0 in at least 95% of runs")`}
	}
	y, err := ParseSweepExpectation(v.Text)
	if err != nil {
		return err
	}
	*x = y
	return nil
}

// YAMLMapKeys says that a map of sweep expectations takes the count names
// as keys.
func (SweepExpectation) YAMLMapKeys() (keys []string, want, nullHint string) {
	keys = plan.CountNames()
	want = fmt.Sprintf(`a mapping of counts to expectations over a sweep's runs (e.g. lost: "== 0 in every run", duplicates: "> 0 in at least 95%% of runs"; counts: %s)`, strings.Join(keys, ", "))
	return keys, want, sweepExpectationHelp
}

// JSONSchema describes a sweep expectation: an integer or the string form.
func (SweepExpectation) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Description: `Over a sweep's runs: a count (== in every run), a comparison (in every run), or a comparison and "in every run" or "in at least P% of runs", e.g. "> 0 in at least 95% of runs".`,
		OneOf: []*jsonschema.Schema{
			{Type: "integer", Minimum: "0"},
			{Type: "string", Pattern: sweepExpectationRE.String()},
		},
	}
}

// SweepExpect is one sweep expectation of a variant, in count order.
type SweepExpect struct {
	Count string
	SweepExpectation
}

// Check is how reports name it: "duplicates > 0 in at least 95% of runs".
func (e SweepExpect) Check() string { return e.Count + " " + e.SweepExpectation.String() }

// SweepExpects are v's sweep expectations, in the order of the counts.
func (v *Variant) SweepExpects() []SweepExpect {
	var out []SweepExpect
	for _, name := range plan.CountNames() {
		if x, ok := v.SweepExpect[name]; ok {
			out = append(out, SweepExpect{Count: name, SweepExpectation: x})
		}
	}
	return out
}

// AddSweepExpect adds the sweep expectation arg, written "VARIANT: COUNT
// EXPECTATION" ("none: duplicates > 0 in at least 95% of runs"), to its
// variant, in place of one the variant has on that count: what "dqbench
// sweep --expect" takes.
func (s *Scenario) AddSweepExpect(arg string) error {
	const form = `write VARIANT: COUNT EXPECTATION, e.g. "none: duplicates > 0 in at least 95% of runs"`
	name, rest, ok := strings.Cut(arg, ":")
	name, rest = strings.TrimSpace(name), strings.TrimSpace(rest)
	count, text, _ := strings.Cut(rest, " ")
	if !ok || name == "" || count == "" || strings.TrimSpace(text) == "" {
		return fmt.Errorf("%s: %s", echo(arg), form)
	}
	i := slices.IndexFunc(s.Variants, func(v Variant) bool { return v.Name == name })
	if i < 0 {
		all := make([]string, len(s.Variants))
		for j, v := range s.Variants {
			all[j] = v.Name
		}
		return fmt.Errorf("%s: scenario %s has no variant %s%s; its variants: %s", echo(arg), s.Name, echo(name), suggest(name, all), strings.Join(all, ", "))
	}
	if !slices.Contains(plan.CountNames(), count) {
		return fmt.Errorf("%s: no count named %s%s; counts: %s", echo(arg), echo(count), suggest(count, plan.CountNames()), strings.Join(plan.CountNames(), ", "))
	}
	x, err := ParseSweepExpectation(text)
	if err != nil {
		return fmt.Errorf("%s: %v", echo(arg), err)
	}
	v := &s.Variants[i]
	if v.SweepExpect == nil {
		v.SweepExpect = map[string]SweepExpectation{}
	}
	v.SweepExpect[count] = x
	return nil
}

// suggest is ` (did you mean "x"?)` when a candidate is close to s.
func suggest(s string, candidates []string) string {
	if c, ok := strictyaml.Suggest(s, candidates); ok {
		return fmt.Sprintf(" (did you mean %q?)", c)
	}
	return ""
}
