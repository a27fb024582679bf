package runner

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines bounds every function in the runner, so that it reads top
// down: a longer one is a list of named steps waiting to be written.
const maxFuncLines = 60

// TestRunnerFunctionsAreShort holds every function and method declared in
// the runner's own (non-test) files to maxFuncLines, from its func line to
// its closing brace. Run with -v to see the longest ones.
func TestRunnerFunctionsAreShort(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	longest, where := 0, ""
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if lines > longest {
				longest, where = lines, name+": "+fn.Name.Name
			}
			if lines > maxFuncLines {
				t.Errorf("%s: %s is %d lines, over %d: split it into named steps", fset.Position(fn.Pos()), fn.Name.Name, lines, maxFuncLines)
			}
		}
	}
	t.Logf("longest function: %s, %d lines (limit %d)", where, longest, maxFuncLines)
}
