package scenario

import (
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/dqbench/dqbench/catalog"
)

// A struct with a `yaml:",params"` field takes, beside its own keys, the
// keys of a parameter struct that depends on one of its own values (a
// fault's type, a broker's kind). The decoder reads the struct's own keys
// first, then asks it for the parameter struct.
type paramser interface {
	// newParams returns a pointer to a fresh parameter struct, or nil when
	// there is none; known is false when the deciding value is unknown (its
	// own error is reported, and the other keys are not judged).
	newParams() (params any, known bool)
	// paramOwners names the other kinds that take key, for a hint.
	paramOwners(key string) []string
	// kindName is the deciding value, e.g. the fault's type.
	kindName() string
}

func (f *Fault) kindName() string  { return string(f.Type) }
func (b *Broker) kindName() string { return string(b.Kind) }

func (f *Fault) newParams() (any, bool) {
	k, ok := catalog.LookupFault(f.Type)
	if !ok {
		return nil, false
	}
	if k.NewParams == nil {
		return nil, true
	}
	return k.NewParams(), true
}

func (f *Fault) paramOwners(key string) []string {
	var out []string
	for _, k := range catalog.Faults {
		if k.NewParams != nil && slices.Contains(yamlNames(k.NewParams()), key) {
			out = append(out, string(k.Type))
		}
	}
	return out
}

func (b *Broker) newParams() (any, bool) {
	k, ok := catalog.LookupBroker(b.Kind)
	if !ok {
		return nil, false
	}
	if k.NewSettings == nil {
		return nil, true
	}
	return k.NewSettings(), true
}

func (b *Broker) paramOwners(key string) []string {
	var out []string
	for _, k := range catalog.Brokers {
		if k.NewSettings != nil && slices.Contains(yamlNames(k.NewSettings()), key) {
			out = append(out, string(k.Kind))
		}
	}
	return out
}

// defaulter is a parameter struct that fills in what a scenario leaves out.
type defaulter interface{ Defaults() }

// allowedValues is a named string type with a closed set of values.
type allowedValues interface{ Allowed() []string }

var (
	_ paramser      = (*Fault)(nil)
	_ paramser      = (*Broker)(nil)
	_ allowedValues = catalog.Mode("")
	_ defaulter     = (*catalog.KafkaSettings)(nil)
)

// yamlNames lists the keys of the struct p points to.
func yamlNames(p any) []string {
	var out []string
	for _, f := range yamlFields(reflectType(p)) {
		out = append(out, f.name)
	}
	return out
}

// paramDoc is the description of key in the struct p points to, as a
// phrase: "where the consumer dies".
func paramDoc(p any, key string) string {
	t := reflectType(p)
	for _, f := range yamlFields(t) {
		if f.name != key {
			continue
		}
		for _, part := range strings.Split(t.FieldByIndex(f.index).Tag.Get("jsonschema"), ",") {
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
	t := reflectType(p)
	for _, f := range yamlFields(t) {
		tag := t.FieldByIndex(f.index).Tag.Get("jsonschema")
		if slices.Contains(strings.Split(tag, ","), "required") {
			out = append(out, f.name)
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
	for _, f := range yamlFields(v.Type()) {
		if f.name == key {
			return v.FieldByIndex(f.index).Interface()
		}
	}
	return nil
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
	for _, f := range yamlFields(v.Type()) {
		fv := v.FieldByIndex(f.index)
		if fv.Kind() != reflect.Int {
			continue
		}
		b := bound{key: f.name, value: int(fv.Int()), lo: math.MinInt, hi: math.MaxInt}
		for _, part := range strings.Split(v.Type().FieldByIndex(f.index).Tag.Get("jsonschema"), ",") {
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
