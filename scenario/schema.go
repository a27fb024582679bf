package scenario

import (
	"github.com/dqbench/dqbench/internal/strictyaml"

	"encoding/json"
	"reflect"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/plan"
)

// Schema returns the JSON Schema (draft 2020-12) of a scenario file, for
// editors to complete and check scenario files with. Unknown keys are not
// allowed anywhere, as in Parse. Every enumeration, every fault type's and
// broker kind's own keys and every count come from the catalog and the
// count table, never from a list kept here.
func Schema() ([]byte, error) {
	s := reflector().Reflect(&Scenario{})
	s.Title = "dqbench scenario"
	s.Description = "A dqbench scenario: a broker, producer and consumer settings, faults to inject and the variants (consumer idempotency strategies) to compare."
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return unescapeHTML(b), nil
}

func reflector() *jsonschema.Reflector {
	return &jsonschema.Reflector{
		ExpandedStruct:             true,
		RequiredFromJSONSchemaTags: true,
		Mapper:                     enumMapper,
	}
}

// enumMapper gives each named string type with a closed set of values
// (catalog's Allowed methods) its enum.
func enumMapper(t reflect.Type) *jsonschema.Schema {
	if t.Kind() != reflect.String {
		return nil
	}
	a, ok := reflect.Zero(t).Interface().(strictyaml.Allowed)
	if !ok {
		return nil
	}
	return &jsonschema.Schema{Type: "string", Enum: anySlice(a.Allowed())}
}

// paramProperties reflects a parameter struct into its properties and
// required keys.
func paramProperties(p any) (*jsonschema.Schema, bool) {
	if p == nil {
		return nil, false
	}
	r := reflector()
	r.DoNotReference = true
	return r.Reflect(p), true
}

// withParams turns s, an object schema of the common keys, into one branch
// per kind: the common keys plus the kind's own (selected by the value of
// key), each branch closed to other keys.
func withParams(s *jsonschema.Schema, key string, kinds []string, params func(kind string) any) {
	var branches []*jsonschema.Schema
	for _, kind := range kinds {
		props := jsonschema.NewProperties()
		for pair := s.Properties.Oldest(); pair != nil; pair = pair.Next() {
			props.Set(pair.Key, pair.Value)
		}
		props.Set(key, &jsonschema.Schema{Const: kind})
		required := []string{key}
		if ps, ok := paramProperties(params(kind)); ok {
			for pair := ps.Properties.Oldest(); pair != nil; pair = pair.Next() {
				props.Set(pair.Key, pair.Value)
			}
			required = append(required, ps.Required...)
		}
		branches = append(branches, &jsonschema.Schema{
			Properties:           props,
			Required:             required,
			AdditionalProperties: jsonschema.FalseSchema,
		})
	}
	s.OneOf = append(s.OneOf, branches...)
	s.AdditionalProperties = nil // the branches close the object
}

// JSONSchemaExtend adds each broker kind's own settings, its modes, and
// requires addresses with mode external where the kind has no default
// address.
func (Broker) JSONSchemaExtend(s *jsonschema.Schema) {
	kinds := catalog.BrokerKind("").Allowed()
	withParams(s, "kind", kinds, func(kind string) any {
		b, _ := catalog.LookupBroker(catalog.BrokerKind(kind))
		if b.NewSettings == nil {
			return nil
		}
		return b.NewSettings()
	})
	for i, branch := range s.OneOf[len(s.OneOf)-len(kinds):] {
		b, _ := catalog.LookupBroker(catalog.BrokerKind(kinds[i]))
		if m, ok := branch.Properties.Get("mode"); ok {
			mode := *m
			mode.Enum = anySlice(catalog.Strings(b.Modes))
			branch.Properties.Set("mode", &mode)
		}
		if b.DefaultAddress == "" {
			branch.If = propertyIs("mode", &jsonschema.Schema{Const: string(catalog.External)})
			branch.Then = &jsonschema.Schema{Required: []string{"addresses"}}
		}
	}
}

// JSONSchemaExtend adds each fault type's own parameters and requires
// exactly one of every and probability.
func (Fault) JSONSchemaExtend(s *jsonschema.Schema) {
	withParams(s, "type", catalog.FaultType("").Allowed(), func(t string) any {
		f, _ := catalog.LookupFault(catalog.FaultType(t))
		if f.NewParams == nil {
			return nil
		}
		return f.NewParams()
	})
	s.AllOf = append(s.AllOf, &jsonschema.Schema{OneOf: []*jsonschema.Schema{
		{Required: []string{"every"}},
		{Required: []string{"probability"}},
	}})
}

// JSONSchemaExtend sets the strategies from the catalog, adds each
// strategy's own settings, and lists each count expect and sweep_expect
// may check, with its doc from the count table.
func (Variant) JSONSchemaExtend(s *jsonschema.Schema) {
	if p, ok := s.Properties.Get("strategy"); ok {
		p.Enum = anySlice(catalog.StrategyNames())
	}
	defer func() {
		withParams(s, "strategy", catalog.StrategyNames(), func(name string) any {
			st, _ := catalog.LookupStrategy(catalog.StrategyName(name))
			if st.NewParams == nil {
				return nil
			}
			return st.NewParams()
		})
		processBranch(s)
	}()
	expect, ok := s.Properties.Get("expect")
	if !ok {
		return
	}
	counts := jsonschema.NewProperties()
	for _, c := range plan.Table {
		counts.Set(c.Name, &jsonschema.Schema{Ref: "#/$defs/Expectation", Description: c.Doc})
	}
	s.Properties.Set("expect", &jsonschema.Schema{
		Type:                 "object",
		Description:          expect.Description,
		Properties:           counts,
		AdditionalProperties: jsonschema.FalseSchema,
	})
	if sweep, ok := s.Properties.Get("sweep_expect"); ok {
		counts := jsonschema.NewProperties()
		for _, c := range plan.Table {
			counts.Set(c.Name, &jsonschema.Schema{Ref: "#/$defs/SweepExpectation", Description: c.Doc})
		}
		s.Properties.Set("sweep_expect", &jsonschema.Schema{
			Type:                 "object",
			Description:          sweep.Description,
			Properties:           counts,
			AdditionalProperties: jsonschema.FalseSchema,
		})
	}
	if varies, ok := s.Properties.Get("varies"); ok {
		reasons := jsonschema.NewProperties()
		for _, c := range plan.Table {
			reasons.Set(c.Name, &jsonschema.Schema{Type: "string", MinLength: ptr(uint64(1)), MaxLength: ptr(uint64(MaxVariesLen))})
		}
		s.Properties.Set("varies", &jsonschema.Schema{
			Type:                 "object",
			Description:          varies.Description,
			Properties:           reasons,
			AdditionalProperties: jsonschema.FalseSchema,
		})
	}
}

// unescapeHTML undoes encoding/json's escaping of <, > and &: the schema is
// read by people too, and ">0" reads better than "\u003e0". It keeps b if
// the result would not mean the same JSON.
func unescapeHTML(b []byte) []byte {
	out := []byte(htmlUnescaper.Replace(string(b)))
	var x, y any
	if json.Unmarshal(b, &x) != nil || json.Unmarshal(out, &y) != nil || !reflect.DeepEqual(x, y) {
		return b
	}
	return out
}

var htmlUnescaper = strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&")

// propertyIs is a schema matching objects whose property name matches p.
func propertyIs(name string, p *jsonschema.Schema) *jsonschema.Schema {
	props := jsonschema.NewProperties()
	props.Set(name, p)
	return &jsonschema.Schema{Properties: props, Required: []string{name}}
}

func anySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// processBranch closes the strategy branches of a variant's schema to the
// process keys and adds the branch of a process variant: process and audit
// instead of strategy and its settings, and no consumer or id overrides.
func processBranch(s *jsonschema.Schema) {
	for _, b := range s.OneOf {
		b.Properties.Delete("process")
		b.Properties.Delete("audit")
	}
	props := jsonschema.NewProperties()
	for pair := s.Properties.Oldest(); pair != nil; pair = pair.Next() {
		switch pair.Key {
		case "strategy", "consumer", "id", "effect":
			continue
		}
		props.Set(pair.Key, pair.Value)
	}
	s.OneOf = append(s.OneOf, &jsonschema.Schema{
		Properties:           props,
		Required:             []string{"process", "audit"},
		AdditionalProperties: jsonschema.FalseSchema,
	})
}

// JSONSchemaExtend requires exactly one of command and build.
func (Process) JSONSchemaExtend(s *jsonschema.Schema) {
	s.OneOf = append(s.OneOf, &jsonschema.Schema{Required: []string{"command"}}, &jsonschema.Schema{Required: []string{"build"}})
}

func ptr[T any](v T) *T { return &v }
