package report

import (
	"bytes"
	"encoding/json"

	"github.com/invopop/jsonschema"
)

// Schema returns the JSON Schema (draft 2020-12) of the JSON report
// (-o json, --json FILE), reflected from the types that write it, so that
// it cannot drift from them: a CI step can check a report against it and
// read schema_version before it reads anything else.
func Schema() ([]byte, error) {
	r := &jsonschema.Reflector{ExpandedStruct: true}
	s := r.Reflect(&jsonReport{})
	s.Title = "dqbench report"
	s.Description = "The JSON report of dqbench run and check (-o json): whether every expectation held, whether every run counts, and per run and variant the counts, expectations and notes."
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	// json.Marshal escapes <, > and & for HTML; a schema is not HTML.
	b = bytes.ReplaceAll(b, []byte(`\u003c`), []byte("<"))
	b = bytes.ReplaceAll(b, []byte(`\u003e`), []byte(">"))
	return bytes.ReplaceAll(b, []byte(`\u0026`), []byte("&")), nil
}
