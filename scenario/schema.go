package scenario

import (
	"encoding/json"
	"reflect"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/dqbench/dqbench/strategy"
)

// Schema returns the JSON Schema (draft 2020-12) of a scenario file, for
// editors to complete and check scenario files with. Unknown keys are not
// allowed anywhere, as in Parse.
func Schema() ([]byte, error) {
	r := &jsonschema.Reflector{
		ExpandedStruct:             true,
		RequiredFromJSONSchemaTags: true,
	}
	s := r.Reflect(&Scenario{})
	s.Title = "dqbench scenario"
	s.Description = "A dqbench scenario: a broker, producer and consumer settings, faults to inject and the variants (consumer idempotency strategies) to compare."
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return unescapeHTML(b), nil
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

// JSONSchemaExtend sets the broker kinds from BrokerKinds and requires
// addresses with mode external.
func (Broker) JSONSchemaExtend(s *jsonschema.Schema) {
	setEnum(s, "kind", BrokerKinds)
	s.If = propertyIs("mode", &jsonschema.Schema{Const: ModeExternal})
	s.Then = &jsonschema.Schema{Required: []string{"addresses"}}
}

// JSONSchemaExtend sets the fault types and crash points from the faults
// and strategy packages, requires exactly one of every and probability, and
// at exactly for the fault types that take it.
func (Fault) JSONSchemaExtend(s *jsonschema.Schema) {
	setEnum(s, "type", faultTypes())
	setEnum(s, "at", crashPoints())
	s.OneOf = []*jsonschema.Schema{
		{Required: []string{"every"}},
		{Required: []string{"probability"}},
	}
	s.If = propertyIs("type", &jsonschema.Schema{Enum: anySlice(takesAt())})
	s.Then = &jsonschema.Schema{Required: []string{atParam}}
	s.Else = &jsonschema.Schema{Not: &jsonschema.Schema{Required: []string{atParam}}}
}

// JSONSchemaExtend sets the strategies from the strategy package and lists
// each count expect may check, so that editors complete them.
func (Variant) JSONSchemaExtend(s *jsonschema.Schema) {
	setEnum(s, "strategy", strategy.Names())
	expect, ok := s.Properties.Get("expect")
	if !ok {
		return
	}
	counts := jsonschema.NewProperties()
	for _, name := range CountNames {
		counts.Set(name, &jsonschema.Schema{Ref: "#/$defs/Expectation", Description: countDocs[name]})
	}
	s.Properties.Set("expect", &jsonschema.Schema{
		Type:                 "object",
		Description:          expect.Description,
		Properties:           counts,
		AdditionalProperties: jsonschema.FalseSchema,
	})
}

// setEnum replaces the enum of property name of s.
func setEnum(s *jsonschema.Schema, name string, values []string) {
	if p, ok := s.Properties.Get(name); ok {
		p.Enum = anySlice(values)
	}
}

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
