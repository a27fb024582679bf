package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
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

// TestComposeConfigLoopback reads docker-compose.yml as Compose itself
// resolves it (`docker compose config`, or the older `docker-compose
// config`, whichever `make compose-check` would use) and requires every
// published port, in the short or the long syntax, to be bound to
// 127.0.0.1. Skipped when neither is installed; TestComposePortsOnLoopback
// reads the file directly.
func TestComposeConfigLoopback(t *testing.T) {
	var out []byte
	var err error
	switch {
	case exec.Command("docker", "compose", "version").Run() == nil:
		out, err = exec.Command("docker", "compose", "-f", "docker-compose.yml", "config").Output()
	default:
		if _, lerr := exec.LookPath("docker-compose"); lerr != nil {
			t.Skip("neither docker compose nor docker-compose is installed")
		}
		out, err = exec.Command("docker-compose", "-f", "docker-compose.yml", "config").Output()
	}
	if err != nil {
		t.Fatalf("compose config: %v", err)
	}
	var doc struct {
		Services map[string]struct {
			Ports []any `yaml:"ports"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	published := 0
	for name, s := range doc.Services {
		for _, p := range s.Ports {
			published++
			switch p := p.(type) {
			case string: // docker-compose 1.x: "127.0.0.1:5432:5432/tcp"
				if !strings.HasPrefix(p, "127.0.0.1:") {
					t.Errorf("service %s publishes %q on every interface", name, p)
				}
			case map[string]any: // docker compose 2.x: {host_ip, published, target}
				if p["host_ip"] != "127.0.0.1" {
					t.Errorf("service %s publishes %v on every interface (host_ip %v)", name, p["published"], p["host_ip"])
				}
			default:
				t.Errorf("service %s: port %v of an unknown shape %T", name, p, p)
			}
		}
	}
	if published == 0 {
		t.Fatal("no published port read from compose config")
	}
}

// TestREADMEMakeTargets: every `make TARGET` the README names (in code) is a target
// of the Makefile that `make help` lists, and the README tells how to check
// docker-compose.yml the way the Makefile does.
func TestREADMEMakeTargets(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	mk, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([a-z0-9-]+):.*## `).FindAllStringSubmatch(string(mk), -1) {
		targets[m[1]] = true
	}
	named := regexp.MustCompile("(?m)(?:`|^)make ([a-z][a-z0-9-]*)").FindAllStringSubmatch(string(readme), -1)
	for _, m := range named {
		if !targets[m[1]] {
			t.Errorf("README.md names \"make %s\", which the Makefile has no documented target for", m[1])
		}
	}
	if !strings.Contains(string(readme), "make compose-check") {
		t.Error("README.md does not say how to check docker-compose.yml (make compose-check)")
	}
	// The Makefile runs whichever Compose is installed; the README says both.
	for _, c := range []string{"docker compose", "docker-compose"} {
		if !strings.Contains(string(mk), c) {
			t.Errorf("Makefile's compose-check does not try %q", c)
		}
		if !strings.Contains(string(readme), "`"+c) {
			t.Errorf("README.md never names %q", c)
		}
	}
}
