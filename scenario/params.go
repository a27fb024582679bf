package scenario

import (
	"github.com/dqbench/dqbench/internal/strictyaml"

	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/dqbench/dqbench/catalog"
)

// The fault's type decides its own keys (strictyaml.Params).

// KindName is the fault's type.
func (f *Fault) KindName() string { return string(f.Type) }

// NewParams returns the fault type's own parameter struct.
func (f *Fault) NewParams() (any, bool) {
	k, ok := catalog.LookupFault(f.Type)
	if !ok {
		return nil, false
	}
	if k.NewParams == nil {
		return nil, true
	}
	return k.NewParams(), true
}

// ParamOwners names the fault types that take key.
func (f *Fault) ParamOwners(key string) []string {
	var out []string
	for _, k := range catalog.Faults {
		if k.NewParams != nil && slices.Contains(yamlNames(k.NewParams()), key) {
			out = append(out, string(k.Type))
		}
	}
	return out
}

// KindName is the broker's kind.
func (b *Broker) KindName() string { return string(b.Kind) }

// NewParams returns the broker kind's own settings struct.
func (b *Broker) NewParams() (any, bool) {
	k, ok := catalog.LookupBroker(b.Kind)
	if !ok {
		return nil, false
	}
	if k.NewSettings == nil {
		return nil, true
	}
	return k.NewSettings(), true
}

// ParamOwners names the broker kinds that take key.
func (b *Broker) ParamOwners(key string) []string {
	var out []string
	for _, k := range catalog.Brokers {
		if k.NewSettings != nil && slices.Contains(yamlNames(k.NewSettings()), key) {
			out = append(out, string(k.Kind))
		}
	}
	return out
}

// KindName is the variant's strategy, or what the variant is without one.
func (v *Variant) KindName() string {
	switch {
	case v.Strategy != "":
		return string(v.Strategy)
	case v.Process != nil:
		return "a process variant"
	}
	return "a variant without a strategy"
}

// NewParams returns the strategy's own settings struct.
func (v *Variant) NewParams() (any, bool) {
	if v.Strategy == "" {
		return nil, true // missing: reported as such; judge the other keys
	}
	st, ok := catalog.LookupStrategy(v.Strategy)
	if !ok {
		return nil, false
	}
	if st.NewParams == nil {
		return nil, true
	}
	return st.NewParams(), true
}

// ParamOwners names the strategies that take key.
func (v *Variant) ParamOwners(key string) []string {
	var out []string
	for _, st := range catalog.Strategies {
		if st.NewParams != nil && slices.Contains(yamlNames(st.NewParams()), key) {
			out = append(out, string(st.Name))
		}
	}
	return out
}

// defaulter is a parameter struct that fills in what a scenario leaves out.
type defaulter interface{ Defaults() }

var (
	_ strictyaml.Params  = (*Fault)(nil)
	_ strictyaml.Params  = (*Broker)(nil)
	_ strictyaml.Params  = (*Variant)(nil)
	_ strictyaml.Allowed = catalog.Mode("")
	_ defaulter          = (*catalog.KafkaSettings)(nil)
)

// yamlNames lists the keys of the struct p points to.
func yamlNames(p any) []string {
	var out []string
	for _, f := range strictyaml.Fields(strictyaml.ReflectType(p)) {
		out = append(out, f.Name)
	}
	return out
}

// paramDoc is the description of key in the struct p points to, as a
// phrase: "where the consumer dies".
func paramDoc(p any, key string) string {
	t := strictyaml.ReflectType(p)
	for _, f := range strictyaml.Fields(t) {
		if f.Name != key {
			continue
		}
		for _, part := range strings.Split(t.FieldByIndex(f.Index).Tag.Get("jsonschema"), ",") {
			if d, ok := strings.CutPrefix(part, "description="); ok {
				d = strings.TrimSuffix(d, ".")
				if d != "" {
					d = strings.ToLower(d[:1]) + d[1:]
				}
				return d
			}
		}
	}
	return ""
}

// requiredParams lists the keys of the struct p points to that its
// jsonschema tags mark required.
func requiredParams(p any) []string {
	var out []string
	t := strictyaml.ReflectType(p)
	for _, f := range strictyaml.Fields(t) {
		tag := t.FieldByIndex(f.Index).Tag.Get("jsonschema")
		if slices.Contains(strings.Split(tag, ","), "required") {
			out = append(out, f.Name)
		}
	}
	return out
}

// fieldValue is the value of the field with yaml name key in the struct p
// points to.
func fieldValue(p any, key string) any {
	v := reflect.ValueOf(p)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	for _, f := range strictyaml.Fields(v.Type()) {
		if f.Name == key {
			return v.FieldByIndex(f.Index).Interface()
		}
	}
	return nil
}

// durationParams lists the duration fields of the struct p points to.
func durationParams(p any) map[string]catalog.Duration {
	v := reflect.ValueOf(p).Elem()
	out := map[string]catalog.Duration{}
	for _, f := range strictyaml.Fields(v.Type()) {
		if d, ok := v.FieldByIndex(f.Index).Interface().(catalog.Duration); ok {
			out[f.Name] = d
		}
	}
	return out
}

// bound is one integer parameter and its allowed range.
type bound struct {
	key           string
	value, lo, hi int
}

// paramBounds lists the integer fields of the struct p points to with the
// range their jsonschema tags give (minimum=, maximum=), so that a kind's
// own settings are checked where they are declared.
func paramBounds(p any) []bound {
	v := reflect.ValueOf(p).Elem()
	var out []bound
	for _, f := range strictyaml.Fields(v.Type()) {
		fv := v.FieldByIndex(f.Index)
		if fv.Kind() != reflect.Int {
			continue
		}
		b := bound{key: f.Name, value: int(fv.Int()), lo: math.MinInt, hi: math.MaxInt}
		for _, part := range strings.Split(v.Type().FieldByIndex(f.Index).Tag.Get("jsonschema"), ",") {
			if x, ok := strings.CutPrefix(part, "minimum="); ok {
				b.lo, _ = strconv.Atoi(x)
			}
			if x, ok := strings.CutPrefix(part, "maximum="); ok {
				b.hi, _ = strconv.Atoi(x)
			}
		}
		out = append(out, b)
	}
	return out
}
