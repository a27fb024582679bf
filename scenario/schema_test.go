package scenario

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/dqbench/dqbench/scenarios"
)

// TestSchemaAgreesWithParse validates scenarios against the generated JSON
// Schema with a real validator: every file Parse accepts, the schema
// accepts, and files with an unknown key, a wrong enum value or a parameter
// of another kind, the schema rejects too.
func TestSchemaAgreesWithParse(t *testing.T) {
	raw, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("dqbench.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("dqbench.schema.json")
	if err != nil {
		t.Fatalf("the schema does not compile: %v", err)
	}
	instance := func(t *testing.T, data []byte) any {
		t.Helper()
		var v any
		if err := yaml.Unmarshal(data, &v); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		return inst
	}

	valid := map[string][]byte{}
	for _, name := range scenarios.Names() {
		valid[name], _ = scenarios.Read(name)
	}
	files, _ := filepath.Glob("testdata/valid/*.yaml")
	for _, f := range files {
		if strings.Contains(f, "merge-keys") {
			continue // merge keys are YAML, not JSON
		}
		valid[f], _ = os.ReadFile(f)
	}
	valid["examples/consumers/scenario.yaml"], _ = os.ReadFile("../examples/consumers/scenario.yaml")
	valid["rabbitmq-external-default-address"] = []byte("version: 1\nname: s\nbroker: {kind: rabbitmq, mode: external}\nvariants: [{name: v, strategy: none}]\n")
	for name, data := range valid {
		if _, err := Parse(name, data); err != nil {
			t.Fatalf("%s does not parse: %v", name, err)
		}
		if err := sch.Validate(instance(t, data)); err != nil {
			t.Errorf("%s: the schema rejects a valid scenario: %v", name, err)
		}
	}

	const base = "version: 1\nname: s\nvariants: [{name: v, strategy: dedup-table-split}]\n"
	for _, bad := range []string{
		base + "broker: {kind: kafka}\nmesages: 3\n",
		base + "broker: {kind: kafka, partitons: 2}\n",
		base + "broker: {kind: kafak}\n",
		base + "broker: {kind: kafka}\nfaults: [{type: consumer-crash, every: 3}]\n",
		base + "broker: {kind: kafka}\nfaults: [{type: produce-response-lost, every: 3, at: before-process}]\n",
		base + "broker: {kind: kafka}\nfaults: [{type: consumer-crash, at: nowhere, every: 3}]\n",
		base + "broker: {kind: kafka}\nfaults: [{type: consumer-crash, at: before-process}]\n",
		base + "broker: {kind: kafka, partitions: 1001}\n",
		base + "broker: {kind: kafka, mode: external}\n",
		base + "broker: {kind: rabbitmq, mode: embedded}\n",
		base + "broker: {kind: rabbitmq, partitions: 2}\n",
		base + "broker: {kind: rabbitmq, queue_type: lazy}\n",
		base + "broker: {kind: kafka, queue_type: quorum}\n",
		"version: 1\nname: s\nbroker: {kind: kafka}\nvariants: [{name: v, process: {command: [x]}}]\n",
		"version: 1\nname: s\nbroker: {kind: kafka}\nvariants: [{name: v, process: {command: [x], build: ./y}, audit: {query: q}}]\n",
		"version: 1\nname: s\nbroker: {kind: kafka}\nvariants: [{name: v, strategy: none, process: {command: [x]}, audit: {query: q}}]\n",
		"version: 1\nname: s\nbroker: {kind: kafka}\nvariants: [{name: v, strategy: none, audit: {query: q}}]\n",
		"version: 1\nname: s\nbroker: {kind: kafka}\nvariants: [{name: v, process: {build: ./y}, audit: {query: q}, id: business}]\n",
		"version: 1\nname: s\nbroker: {kind: kafka}\nfaults: [{type: consumer-kill, at: later, every: 3}]\nvariants: [{name: v, process: {build: ./y}, audit: {query: q}}]\n",
	} {
		if _, err := Parse("bad.yaml", []byte(bad)); err == nil {
			t.Fatalf("Parse accepts %q", bad)
		}
		if err := sch.Validate(instance(t, []byte(bad))); err == nil {
			t.Errorf("the schema accepts what Parse rejects:\n%s", bad)
		}
	}
}
