package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/dqbench/dqbench/brokers"
	"github.com/dqbench/dqbench/report"
)

// TestReportSchema: dqbench schema --output prints a schema that every
// JSON report holds to (a passing run, a failing one, one that could not
// run, an invalid scenario), each with its schema_version, and that
// rejects a report with a key it does not know or without a count.
func TestReportSchema(t *testing.T) {
	r := run(t, nil, "schema", "--output")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(r.out))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("report.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("report.schema.json")
	if err != nil {
		t.Fatalf("the schema does not compile: %v", err)
	}

	cli, failing := scenarioFiles(t)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\nname: bad\nbroker: {kind: kafak}\nvariants:\n  - {name: a, strategy: none}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	unreachable := fmt.Errorf("%w: cannot reach RabbitMQ at amqp://127.0.0.1:1/", brokers.ErrUnreachable)
	var passing string
	for _, tc := range []struct {
		name string
		fake *fakeRunner
		args []string
	}{
		{"passing", nil, []string{"run", cli, "-o", "json"}},
		{"failing", nil, []string{"run", failing, "-o", "json"}},
		{"could not run", &fakeRunner{err: unreachable, notStarted: true}, []string{"run", cli, "-o", "json"}},
		{"invalid", nil, []string{"run", bad, "-o", "json"}},
	} {
		r := run(t, tc.fake, tc.args...)
		var top struct {
			SchemaVersion *int `json:"schema_version"`
		}
		if err := json.Unmarshal([]byte(r.out), &top); err != nil || top.SchemaVersion == nil || *top.SchemaVersion != report.SchemaVersion {
			t.Errorf("%s: schema_version %v, want %d (%v):\n%s", tc.name, top.SchemaVersion, report.SchemaVersion, err, r.out)
		}
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(r.out))
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.name, err, r.out)
		}
		if err := sch.Validate(inst); err != nil {
			t.Errorf("%s: the report does not hold to the schema: %v\n%s", tc.name, err, r.out)
		}
		if tc.name == "passing" {
			passing = r.out
		}
	}

	for what, change := range map[string]func(string) string{
		"an unknown key": func(s string) string { return strings.Replace(s, `"passed":`, `"pased": true, "passed":`, 1) },
		"no duplicates":  func(s string) string { return strings.Replace(s, `"duplicates":`, `"duplicate":`, 1) },
	} {
		var v any
		if err := json.Unmarshal([]byte(change(passing)), &v); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(v)
		inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if sch.Validate(inst) == nil {
			t.Errorf("the schema takes a report with %s", what)
		}
	}
}
