package catalog

import (
	"fmt"
	"time"

	"github.com/invopop/jsonschema"

	"github.com/dqbench/dqbench/internal/strictyaml"
)

// Duration is a time.Duration written as "30s", "2m", "1m30s", in a
// scenario and in the parameters of a fault or strategy.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText renders d as "1m30s".
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText parses "30s", "2m", "1m30s".
func (d *Duration) UnmarshalText(b []byte) error {
	x, err := parseDuration(string(b))
	if err != nil {
		return err
	}
	*d = x
	return nil
}

const durationHelp = `a duration such as "30s", "2m" or "1m30s" (units: ms, s, m, h)`

func parseDuration(s string) (Duration, error) {
	x, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("bad duration %s: write %s", strictyaml.Echo(s), durationHelp)
	}
	return Duration(x), nil
}

// durationPattern is what the JSON schema accepts; time.ParseDuration decides.
const durationPattern = `^([0-9]*\.?[0-9]+(ns|us|µs|ms|s|m|h))+$`

// JSONSchema describes a duration string.
func (Duration) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:     "string",
		Pattern:  durationPattern,
		Examples: []any{"30s", "2m", "1m30s"},
	}
}

// UnmarshalYAMLScalar reads a duration for the strict decoder: a string
// such as "30s"; a bare number is an error that suggests a unit.
func (d *Duration) UnmarshalYAMLScalar(v strictyaml.ScalarValue) error {
	switch {
	case v.IsString:
		x, err := parseDuration(v.Text)
		if err != nil {
			return err
		}
		*d = x
		return nil
	case v.IsInt:
		return &strictyaml.WrongType{Want: durationHelp, Hint: fmt.Sprintf("; add a unit, e.g. %ss", strictyaml.Clip(v.Text))}
	}
	return &strictyaml.WrongType{Want: durationHelp}
}
