package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/dqbench/dqbench/catalog"
	"github.com/dqbench/dqbench/internal/strictyaml"
	"github.com/dqbench/dqbench/plan"
)

// Expectation is a check on one count: Op is one of ==, !=, >, >=, <, <=.
// In YAML it is a number (meaning ==) or a string such as ">0" or "<= 5".
type Expectation struct {
	Op    string
	Value int
}

// expectationRE matches the string form; the operator is optional (==).
var expectationRE = regexp.MustCompile(`^\s*(==|!=|>=|<=|>|<)?\s*([0-9]+)\s*$`)

const expectationHelp = `write a count like 0, or a comparison like ">0", ">= 3", "<=5", "!=0"`

// ParseExpectation parses the string form of an expectation: "3", "==0",
// ">0", ">= 3", "<=5", "!= 2".
func ParseExpectation(s string) (Expectation, error) {
	m := expectationRE.FindStringSubmatch(s)
	if m == nil {
		return Expectation{}, fmt.Errorf("bad expectation %s: %s", echo(s), expectationHelp)
	}
	n, err := strconv.Atoi(m[2])
	if err != nil {
		return Expectation{}, fmt.Errorf("bad expectation %s: the number is too large", echo(s))
	}
	op := m[1]
	if op == "" {
		op = "=="
	}
	return Expectation{Op: op, Value: n}, nil
}

// Holds reports whether count n meets the expectation.
func (e Expectation) Holds(n int) bool {
	switch e.Op {
	case "==", "":
		return n == e.Value
	case "!=":
		return n != e.Value
	case ">":
		return n > e.Value
	case ">=":
		return n >= e.Value
	case "<":
		return n < e.Value
	case "<=":
		return n <= e.Value
	}
	return false
}

// String renders the expectation as "> 0", "== 0".
func (e Expectation) String() string {
	op := e.Op
	if op == "" {
		op = "=="
	}
	return op + " " + strconv.Itoa(e.Value)
}

// MarshalText renders the expectation as in String.
func (e Expectation) MarshalText() ([]byte, error) { return []byte(e.String()), nil }

// UnmarshalText parses the string form (see ParseExpectation).
func (e *Expectation) UnmarshalText(b []byte) error {
	x, err := ParseExpectation(string(b))
	if err != nil {
		return err
	}
	*e = x
	return nil
}

// UnmarshalYAML accepts a non-negative integer (== n) or the string form.
func (e *Expectation) UnmarshalYAML(unmarshal func(any) error) error {
	var v any
	if err := unmarshal(&v); err != nil {
		return err
	}
	x, err := expectationFrom(v)
	if err != nil {
		return err
	}
	*e = x
	return nil
}

// UnmarshalJSON accepts a JSON number (== n) or the string form.
func (e *Expectation) UnmarshalJSON(b []byte) error {
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return err
	}
	if n, ok := v.(json.Number); ok {
		v = n.String()
	}
	x, err := expectationFrom(v)
	if err != nil {
		return err
	}
	*e = x
	return nil
}

// expectationFrom converts a decoded YAML or JSON value.
func expectationFrom(v any) (Expectation, error) {
	switch v := v.(type) {
	case string:
		return ParseExpectation(v)
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return ParseExpectation(fmt.Sprint(v))
	}
	return Expectation{}, fmt.Errorf("bad expectation %v: %s", v, expectationHelp)
}

// JSONSchema describes an expectation: an integer or a comparison string.
func (Expectation) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Description: "A count (means ==) or a comparison such as \">0\", \">= 3\", \"<=5\", \"!=0\".",
		OneOf: []*jsonschema.Schema{
			{Type: "integer", Minimum: "0"},
			{Type: "string", Pattern: expectationRE.String()},
		},
	}
}

// Plan is what the judge needs of s: each variant's name, strategy and
// expectations, in report order.
func (s *Scenario) Plan() plan.Plan {
	p := plan.Plan{Broker: s.Broker.Kind}
	for _, v := range s.Variants {
		pv := plan.Variant{Name: v.Name, Strategy: string(v.Strategy)}
		if v.Process != nil {
			pv.Strategy = v.Process.Label()
		}
		if w, ok := v.Params.(catalog.DedupWindow); ok {
			if key, d := w.DedupWindow(); d > 0 {
				pv.Window = &plan.Window{Key: key, D: d.D()}
			}
		}
		if w, ok := s.BrokerSettingsFor(v).(catalog.PublishDedupWindow); ok {
			if key, d := w.PublishDedupWindow(); d > 0 {
				pv.PublishWindow = &plan.Window{Key: key, D: d.D()}
			}
		}
		for _, name := range plan.CountNames() {
			if e, ok := v.Expect[name]; ok {
				pv.Expect = append(pv.Expect, plan.Expect{Count: name, Text: e.String(), Holds: e.Holds})
			}
			if why, ok := v.Varies[name]; ok {
				pv.Varies = append(pv.Varies, plan.Varies{Count: name, Why: string(why)})
			}
		}
		p.Variants = append(p.Variants, pv)
	}
	return p
}

// UnmarshalYAMLScalar reads an expectation for the strict decoder: an
// integer or a comparison string.
func (e *Expectation) UnmarshalYAMLScalar(v strictyaml.ScalarValue) error {
	if !v.IsString && !v.IsInt {
		return &strictyaml.WrongType{Want: `a count or a comparison (e.g. 0, ">0", "<= 5")`}
	}
	x, err := ParseExpectation(v.Text)
	if err != nil {
		return err
	}
	*e = x
	return nil
}

// YAMLMapKeys says that a map of expectations takes the count names (from
// the count table) as keys.
func (Expectation) YAMLMapKeys() (keys []string, want, nullHint string) {
	keys = plan.CountNames()
	want = fmt.Sprintf(`a mapping of counts to expectations (e.g. duplicates: 0, lost: ">0"; counts: %s)`, strings.Join(keys, ", "))
	return keys, want, expectationHelp
}

// Varies is why a count may differ between runs with one seed: timing the
// seed does not decide (how far a consumer got before a crash, what a
// broker had queued).
type Varies string

// MaxVariesLen bounds a reason's length: it is printed in every report.
const MaxVariesLen = 300

// UnmarshalYAMLScalar reads a reason: a non-empty string.
func (v *Varies) UnmarshalYAMLScalar(s strictyaml.ScalarValue) error {
	if !s.IsString || strings.TrimSpace(s.Text) == "" {
		return &strictyaml.WrongType{Want: "a reason, as text (why this count depends on timing)"}
	}
	if len(s.Text) > MaxVariesLen {
		return fmt.Errorf("a reason of at most %d characters, got %d", MaxVariesLen, len(s.Text))
	}
	*v = Varies(s.Text)
	return nil
}

// YAMLMapKeys says that varies takes the count names as keys.
func (Varies) YAMLMapKeys() (keys []string, want, nullHint string) {
	keys = plan.CountNames()
	want = fmt.Sprintf("a mapping of counts to why each may differ between runs with one seed (e.g. lost: how many QoS 0 publishes arrive while no subscriber is online; counts: %s)", strings.Join(keys, ", "))
	return keys, want, "give the reason as text"
}
