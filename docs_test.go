package main

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/format"
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
	"unicode"

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

// TestExtendingListsEveryAction: docs/extending.md's table of consumer
// actions names every faults.ActionKind constant (faults/consumer.go).
func TestExtendingListsEveryAction(t *testing.T) {
	doc, err := os.ReadFile("docs/extending.md")
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), "faults/consumer.go", nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST || len(g.Specs) == 0 {
			continue
		}
		if first, ok := g.Specs[0].(*ast.ValueSpec); !ok || first.Type == nil || fmt.Sprint(first.Type) != "ActionKind" {
			continue
		}
		for _, spec := range g.Specs {
			for _, n := range spec.(*ast.ValueSpec).Names {
				kinds = append(kinds, n.Name)
			}
		}
	}
	if len(kinds) < 10 {
		t.Fatalf("found %d ActionKind constants in faults/consumer.go (%v); the pattern is broken", len(kinds), kinds)
	}
	for _, k := range kinds {
		if !strings.Contains(string(doc), "`faults."+k+"`") {
			t.Errorf("docs/extending.md does not name the consumer action `faults.%s`", k)
		}
	}
}

// TestExtendingExamples holds docs/extending.md's Go blocks to the code,
// each by its first line:
//
//   - "// new file: PATH": a whole new file, gofmt-formatted;
//   - "// add to pkg.List (PATH)": an entry, put just before the closing
//     brace of List's declaration in PATH;
//   - "// from PATH": an excerpt of PATH; its lines ("// ..." marks a cut)
//     appear there in this order.
//
// The new files and the entries, all at once, are laid over the tree
// (go build -overlay) and the packages they touch are built and vetted:
// following the page adds every worked example, and they compile against
// the real APIs.
func TestExtendingExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds packages with the examples laid over them")
	}
	doc, err := os.ReadFile("docs/extending.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	newFile := regexp.MustCompile(`^// new file: (\S+)$`)
	addTo := regexp.MustCompile(`^// add to [a-z]+\.([A-Za-z]+) \((\S+)\)$`)
	from := regexp.MustCompile(`^// from (\S+)$`)
	overlay := map[string]string{} // path → content
	read := func(path string) string {
		if c, ok := overlay[path]; ok {
			return c
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("docs/extending.md names %s: %v", path, err)
		}
		return string(b)
	}
	var pkgs []string
	for _, b := range blocks {
		first, body, _ := strings.Cut(b[1], "\n")
		body = strings.TrimLeft(body, "\n")
		switch {
		case newFile.MatchString(first):
			path := newFile.FindStringSubmatch(first)[1]
			if formatted, err := format.Source([]byte(body)); err != nil || string(formatted) != body {
				t.Errorf("docs/extending.md: the block of %s is not gofmt-formatted (%v)", path, err)
			}
			if _, err := os.Stat(path); err == nil {
				t.Errorf("docs/extending.md adds %s, which exists: name the example's file after something this build lacks", path)
			}
			overlay[path] = body
			pkgs = append(pkgs, "./"+filepath.Dir(path))
		case addTo.MatchString(first):
			m := addTo.FindStringSubmatch(first)
			list, path := m[1], m[2]
			content := read(path)
			decl := regexp.MustCompile(`(?m)^(var|type) ` + list + `\b`).FindStringIndex(content)
			if decl == nil {
				t.Errorf("docs/extending.md adds to %s in %s, which does not declare it", list, path)
				continue
			}
			end := strings.Index(content[decl[0]:], "\n}\n")
			if end < 0 {
				t.Errorf("%s: no closing brace of %s", path, list)
				continue
			}
			at := decl[0] + end + 1
			overlay[path] = content[:at] + body + content[at:]
			pkgs = append(pkgs, "./"+filepath.Dir(path))
		case from.MatchString(first):
			path := from.FindStringSubmatch(first)[1]
			checkExcerpt(t, path, read(path), body)
		default:
			t.Errorf("docs/extending.md: a Go block starts with %q, not with // new file:, // add to or // from", first)
		}
	}
	if len(overlay) == 0 {
		t.Fatal("no example found in docs/extending.md; the pattern is broken")
	}
	dir := t.TempDir()
	replace := map[string]string{}
	for path, content := range overlay {
		abs, err := filepath.Abs(path)
		if err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(dir, strings.ReplaceAll(path, "/", "_"))
		if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		replace[abs] = tmp
	}
	js, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		t.Fatal(err)
	}
	overlayFile := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlayFile, js, 0o644); err != nil {
		t.Fatal(err)
	}
	slices.Sort(pkgs)
	pkgs = slices.Compact(pkgs)
	for _, verb := range []string{"build", "vet"} {
		cmd := exec.Command("go", append([]string{verb, "-overlay=" + overlayFile}, pkgs...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("go %s of docs/extending.md's examples (%s): %v\n%s", verb, strings.Join(pkgs, " "), err, out)
		}
	}
}

// checkExcerpt fails t unless every line of excerpt ("// ..." aside)
// appears in content, in order, spaces aside.
func checkExcerpt(t *testing.T, path, content, excerpt string) {
	t.Helper()
	squash := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	var lines []string
	for _, l := range strings.Split(content, "\n") {
		lines = append(lines, squash(l))
	}
	i := 0
	for _, want := range strings.Split(excerpt, "\n") {
		want = squash(want)
		if want == "" || want == "// ..." {
			continue
		}
		j := slices.Index(lines[i:], want)
		if j < 0 {
			t.Errorf("docs/extending.md quotes %s, which has no line %q (after the lines quoted before it)", path, want)
			return
		}
		i += j + 1
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

// TestREADMEMakeTargets: every `make TARGET` the README and the pages moved
// out of it name (in code) is a target of the Makefile that `make help`
// lists, and the README tells how to check docker-compose.yml the way the
// Makefile does.
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
	for _, file := range []string{"README.md", "docs/cli.md", "docs/ci.md", "docs/reports.md", "docs/builtins.md", "docs/brokers.md", "docs/performance.md"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		named := regexp.MustCompile("(?m)(?:`|^)make ([a-z][a-z0-9-]*)").FindAllStringSubmatch(string(b), -1)
		for _, m := range named {
			if !targets[m[1]] {
				t.Errorf("%s names \"make %s\", which the Makefile has no documented target for", file, m[1])
			}
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

// TestMarkdownLinks: every relative link in README.md and docs/*.md (and
// image) points at a file or directory that exists, and a link with an
// anchor into a Markdown file at a heading (or an <a id>) it has: a
// section moved between the README and docs/ takes its links along.
func TestMarkdownLinks(t *testing.T) {
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{"README.md"}, files...)
	link := regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)
	headings := map[string][]string{} // file → its anchors
	checked := 0
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range proseLines(string(b)) {
			if line == "" {
				continue
			}
			for _, m := range link.FindAllStringSubmatch(stripCodeSpans(line), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, anchor, _ := strings.Cut(target, "#")
				resolved := file
				if path != "" {
					resolved = filepath.Join(filepath.Dir(file), path)
					if _, err := os.Stat(resolved); err != nil {
						t.Errorf("%s:%d: link %s: no file %s", file, n+1, target, resolved)
						continue
					}
				}
				checked++
				if anchor == "" || !strings.HasSuffix(resolved, ".md") {
					continue
				}
				if headings[resolved] == nil {
					doc, err := os.ReadFile(resolved)
					if err != nil {
						t.Errorf("%s:%d: link %s: %v", file, n+1, target, err)
						continue
					}
					headings[resolved] = anchors(string(doc))
				}
				if !slices.Contains(headings[resolved], anchor) {
					t.Errorf("%s:%d: link %s: %s has no heading or id %q", file, n+1, target, resolved, anchor)
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("checked only %d links; the pattern is broken", checked)
	}
}

// proseLines is md's lines with those of fenced code blocks blanked, so a
// line's index stays its number less one.
func proseLines(md string) []string {
	lines := strings.Split(md, "\n")
	fenced := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			lines[i] = ""
			continue
		}
		if fenced {
			lines[i] = ""
		}
	}
	return lines
}

var (
	codeSpan = regexp.MustCompile("`[^`]*`")
	anchorID = regexp.MustCompile(`<a id="([^"]+)"`)
	heading  = regexp.MustCompile(`^#{1,6} (.*)$`)
)

// stripCodeSpans blanks the `code spans` of a line: a link there is text.
func stripCodeSpans(line string) string {
	return codeSpan.ReplaceAllStringFunc(line, func(s string) string {
		if strings.Contains(s, "](") {
			return ""
		}
		return s
	})
}

// anchors lists the anchors GitHub gives md's headings (lower case, no
// punctuation but - and _, spaces to -, -1, -2 for repeats) and its
// <a id="..."> tags.
func anchors(md string) []string {
	var out []string
	seen := map[string]int{}
	for _, l := range proseLines(md) {
		for _, m := range anchorID.FindAllStringSubmatch(l, -1) {
			out = append(out, m[1])
		}
		h := heading.FindStringSubmatch(l)
		if h == nil {
			continue
		}
		var slug strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(h[1])) {
			switch {
			case r == ' ':
				slug.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				slug.WriteRune(r)
			}
		}
		s := slug.String()
		if n := seen[s]; n > 0 {
			out = append(out, fmt.Sprintf("%s-%d", s, n))
		} else {
			out = append(out, s)
		}
		seen[s]++
	}
	return out
}

// TestREADMEShort: the README stays what a user reads first (what dqbench
// does, the two commands, CI, reports, brokers, scenarios, the current
// numbers), under 500 lines; reference and measurement logs go to docs/.
func TestREADMEShort(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n >= 500 {
		t.Errorf("README.md has %d lines; keep it under 500 and move reference sections to docs/ (linked)", n)
	}
}
