package scenario

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/plan"
)

var scenarioType = reflect.TypeFor[Scenario]()

// YAML renders s as it runs: defaults applied and command-line overrides
// (--seed, --messages, --timeout) included, every key in file order, so
// that the file parses back into the same scenario.
func (s *Scenario) YAML() ([]byte, error) { return s.yaml(renderer{}) }

// SharedYAML is YAML with every password (of a URL or a DSN) masked,
// whatever characters it holds: what a saved run or a report shows, which
// gets shared; judging a run again needs no password.
func (s *Scenario) SharedYAML() ([]byte, error) {
	return s.yaml(renderer{text: catalog.MaskURL})
}

func (s *Scenario) yaml(r renderer) ([]byte, error) {
	body, err := yaml.MarshalWithOptions(r.render(reflect.ValueOf(s).Elem()), yaml.Flow(false), yaml.UseLiteralStyleIfMultiline(true))
	if err != nil {
		return nil, err
	}
	head := fmt.Sprintf("# The scenario as dqbench ran it (defaults and command-line overrides applied).\n# Read from %s.\n", s.File)
	return append([]byte(head), body...), nil
}

// renderer renders a scenario's values; text, when set, rewrites every
// string value.
type renderer struct{ text func(string) string }

// render turns v into YAML-ready values: structs become ordered mappings of
// their non-zero yaml fields, a `yaml:",params"` or `yaml:",inline"` field is
// inlined.
func (r renderer) render(v reflect.Value) any {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return r.render(v.Elem())
	case reflect.Struct:
		if m, ok := v.Interface().(interface{ MarshalText() ([]byte, error) }); ok {
			b, _ := m.MarshalText()
			return string(b)
		}
		var out yaml.MapSlice
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			fv := v.Field(i)
			if opts == "params" || opts == "inline" {
				if inner, ok := r.render(fv).(yaml.MapSlice); ok {
					out = append(out, inner...)
				}
				continue
			}
			if fv.IsZero() && !(t == scenarioType && name == "seed") {
				continue
			}
			out = append(out, yaml.MapItem{Key: name, Value: r.render(fv)})
		}
		return out
	case reflect.Slice:
		out := make([]any, v.Len())
		for i := range v.Len() {
			out[i] = r.render(v.Index(i))
		}
		return out
	case reflect.Map:
		var out yaml.MapSlice
		keys := v.MapKeys()
		names := make([]string, len(keys))
		for i, k := range keys {
			names[i] = k.String()
		}
		// Counts in report order, other keys sorted.
		for _, k := range sortedKeys(names) {
			out = append(out, yaml.MapItem{Key: k, Value: r.render(v.MapIndex(reflect.ValueOf(k).Convert(v.Type().Key())))})
		}
		return out
	case reflect.String:
		if r.text != nil {
			return r.text(v.String())
		}
		return v.String()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if m, ok := v.Interface().(interface{ MarshalText() ([]byte, error) }); ok {
			b, _ := m.MarshalText()
			return string(b)
		}
		return v.Int()
	case reflect.Float32, reflect.Float64:
		return v.Float()
	case reflect.Bool:
		return v.Bool()
	}
	return v.Interface()
}

func sortedKeys(names []string) []string {
	order := map[string]int{}
	for i, n := range plan.CountNames() {
		order[n] = i + 1
	}
	out := slices.Clone(names)
	slices.SortFunc(out, func(a, b string) int {
		oa, ob := order[a], order[b]
		switch {
		case oa != ob && oa > 0 && ob > 0:
			return oa - ob
		case oa > 0 && ob == 0:
			return -1
		case ob > 0 && oa == 0:
			return 1
		}
		return strings.Compare(a, b)
	})
	return out
}
