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

// maxFuncLines bounds every function in the runner and the checker, so
// that each reads top down: a longer one is a list of named steps waiting
// to be written.
const maxFuncLines = 60

// shortFuncDirs are the packages held to maxFuncLines: the runner and the
// checker. (Not cmd yet: some of its commands are over.)
var shortFuncDirs = []string{".", "../check"}

// TestFunctionsAreShort holds every function and method declared in the
// own (non-test) files of shortFuncDirs to maxFuncLines, from its func
// line to its closing brace. Run with -v to see the longest one of each.
func TestFunctionsAreShort(t *testing.T) {
	for _, dir := range shortFuncDirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
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
		t.Logf("longest function in %s: %s, %d lines (limit %d)", dir, where, longest, maxFuncLines)
	}
}
