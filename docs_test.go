package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// TestExtendingNamesExist holds docs/extending.md to the code: every
// `pkg.Name` or `pkg.Name.Member` it names in backticks must be declared in
// the package of that name (a type, function, method, field, variable or
// constant).
func TestExtendingNamesExist(t *testing.T) {
	doc, err := os.ReadFile("docs/extending.md")
	if err != nil {
		t.Fatal(err)
	}
	decls := map[string]map[string]bool{} // package name → declared names
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkg := f.Name.Name
		if decls[pkg] == nil {
			decls[pkg] = map[string]bool{}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.FuncDecl:
				decls[pkg][x.Name.Name] = true
			case *ast.TypeSpec:
				decls[pkg][x.Name.Name] = true
			case *ast.ValueSpec:
				for _, n := range x.Names {
					decls[pkg][n.Name] = true
				}
			case *ast.Field:
				for _, n := range x.Names {
					decls[pkg][n.Name] = true
				}
			case *ast.AssignStmt:
				for _, l := range x.Lhs {
					if id, ok := l.(*ast.Ident); ok && x.Tok == token.DEFINE {
						decls[pkg][id.Name] = true
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ref := regexp.MustCompile("`([a-z][a-z0-9]*)\\.([A-Za-z_][A-Za-z0-9_]*)(?:\\.([A-Za-z_][A-Za-z0-9_]*))?")
	found := 0
	for _, m := range ref.FindAllStringSubmatch(string(doc), -1) {
		pkg, names := m[1], m[2:]
		if decls[pkg] == nil {
			// A variable or type (spec.Name, tally.add): the names must
			// be declared somewhere.
			for _, name := range append([]string{pkg}, names...) {
				if name != "" && !declaredAnywhere(decls, name) {
					t.Errorf("docs/extending.md names %s, but nothing declares %s", m[0][1:], name)
				}
			}
			continue
		}
		for _, name := range names {
			if name != "" && !decls[pkg][name] {
				t.Errorf("docs/extending.md names %s, but package %s declares no %s", m[0][1:], pkg, name)
			}
		}
		found++
	}
	if found < 20 {
		t.Errorf("found only %d identifiers in docs/extending.md; the pattern is broken", found)
	}
}

func declaredAnywhere(decls map[string]map[string]bool, name string) bool {
	for _, names := range decls {
		if names[name] {
			return true
		}
	}
	return false
}

// TestComposePortsOnLoopback: docker-compose.yml publishes every port on
// 127.0.0.1 only (PostgreSQL trusts every client, RabbitMQ takes
// guest/guest), and the host-networked toxiproxy serves its API there too.
func TestComposePortsOnLoopback(t *testing.T) {
	b, err := os.ReadFile("docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]struct {
			Ports       []string `yaml:"ports"`
			NetworkMode string   `yaml:"network_mode"`
			Command     []string `yaml:"command"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Services) == 0 {
		t.Fatal("no services read")
	}
	for name, s := range doc.Services {
		for _, p := range s.Ports {
			if !strings.HasPrefix(p, "127.0.0.1:") {
				t.Errorf("service %s publishes %q on every interface; write \"127.0.0.1:%s\"", name, p, p)
			}
		}
		if s.NetworkMode == "host" && name == "toxiproxy" && !slices.Contains(s.Command, "-host=127.0.0.1") {
			t.Errorf("service %s: host networking with its API on every interface; add command: [\"-host=127.0.0.1\"]", name)
		}
	}
}
