package scenario

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/dqbench/dqbench/scenarios"
)

// Resolve finds a scenario by argument: an existing file path, or the name
// of a built-in scenario.
func Resolve(arg string) (*Scenario, error) {
	if fi, err := os.Stat(arg); err == nil {
		if fi.IsDir() {
			return nil, fmt.Errorf("%s is a directory; give a scenario file (.yaml) or a built-in name (%s)", arg, strings.Join(scenarios.Names(), ", "))
		}
		return Load(arg)
	}
	if data, ok := scenarios.Read(arg); ok {
		return Parse("builtin:"+arg, data)
	}
	names := scenarios.Names()
	return nil, fmt.Errorf("no scenario file or built-in named %q (built-ins: %s)%s",
		arg, strings.Join(names, ", "), didYouMean(strings.TrimSuffix(arg, ".yaml"), names))
}

// Load reads and parses the scenario file at path.
func Load(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read scenario: %w", err)
	}
	return Parse(path, data)
}

// Parse parses, checks and completes the scenario in data, read from file
// (used in messages). On failure the error is an Errors listing every
// problem found, each at file:line:col.
func Parse(file string, data []byte) (*Scenario, error) {
	root, err := parseYAML(file, data)
	if err != nil {
		return nil, err
	}
	d := newDecoder(file, root)
	var s Scenario
	d.decode("", root, reflect.ValueOf(&s).Elem())
	c := checker{d: d, s: &s}
	c.check()
	if len(d.errs) > 0 {
		return nil, d.errs.sorted()
	}
	s.File = file
	s.Source = data
	for i := range s.Faults {
		s.Faults[i].Line = d.line(fmt.Sprintf("faults[%d]", i))
	}
	for i := range s.Variants {
		s.Variants[i].Line = d.line(fmt.Sprintf("variants[%d]", i))
	}
	if !d.has("seed") {
		s.Seed = DefaultSeed // seed: 0 is a seed like any other
	}
	applyDefaults(&s)
	return &s, nil
}

// parseYAML returns the body of the one YAML document in data.
func parseYAML(file string, data []byte) (root ast.Node, err error) {
	defer func() {
		// The YAML parser is a dependency; a bug in it must not crash dqbench.
		if r := recover(); r != nil {
			root, err = nil, Errors{{File: file, Line: 1, Col: 1, Msg: fmt.Sprintf("cannot parse YAML: %v", r)}}
		}
	}()
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, syntaxError(file, err)
	}
	var docs []ast.Node
	for _, doc := range f.Docs {
		if doc != nil && !isNil(doc.Body) {
			docs = append(docs, doc.Body)
		}
	}
	switch {
	case len(docs) == 0:
		return nil, Errors{{File: file, Line: 1, Col: 1, Msg: "empty scenario: start with version: 1, then name, broker and variants"}}
	case len(docs) > 1:
		line, col, _ := nodePos(docs[1])
		return nil, Errors{{File: file, Line: max(line, 1), Col: max(col, 1),
			Msg: "a second YAML document (after ---): a file holds one scenario; remove the ---, or split the file"}}
	}
	return docs[0], nil
}

// syntaxError turns the YAML parser's error into an Errors at its position.
func syntaxError(file string, err error) error {
	e := &Error{File: file, Line: 1, Col: 1, Msg: "YAML syntax error: " + err.Error()}
	var ye yaml.Error
	if errors.As(err, &ye) {
		e.Msg = "YAML syntax error: " + ye.GetMessage()
		if tk := ye.GetToken(); tk != nil && tk.Position != nil && tk.Position.Line > 0 {
			e.Line, e.Col = tk.Position.Line, max(tk.Position.Column, 1)
		}
	}
	return Errors{e}
}
