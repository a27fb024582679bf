package scenario

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/dqbench/dqbench/scenarios"
)

// Resolve finds a scenario by argument: an existing file path, or the name
// of a built-in scenario.
func Resolve(arg string) (*Scenario, error) {
	fi, err := os.Stat(arg)
	if err == nil {
		if fi.IsDir() {
			return nil, fmt.Errorf("%s is a directory; give a scenario file (.yaml) or a built-in name (%s)", clip(arg), strings.Join(scenarios.Names(), ", "))
		}
		return Load(arg)
	}
	if data, ok := scenarios.Read(arg); ok {
		return Parse("builtin:"+arg, data)
	}
	names := scenarios.Names()
	builtins := fmt.Sprintf("(built-ins: %s)%s", strings.Join(names, ", "),
		didYouMean(strings.TrimSuffix(strings.TrimSuffix(filepath.Base(arg), ".yaml"), ".yml"), names))
	var pe *fs.PathError
	switch {
	case !errors.Is(err, fs.ErrNotExist) && errors.As(err, &pe):
		return nil, fmt.Errorf("%s: %v", clip(arg), pe.Err) // the error without the path, which may be long
	case looksLikePath(arg):
		return nil, fmt.Errorf("%s: no such file; give an existing scenario file or a built-in name %s", clip(arg), builtins)
	}
	return nil, fmt.Errorf("no scenario file or built-in named %s %s", echo(arg), builtins)
}

// looksLikePath reports whether arg names a file rather than a built-in.
func looksLikePath(arg string) bool {
	return strings.ContainsAny(arg, `/\`) || strings.HasSuffix(arg, ".yaml") || strings.HasSuffix(arg, ".yml")
}

// ResolveContext is Resolve, but returns ctx.Err() as soon as ctx is done,
// so that Ctrl-C is not held up by a slow file (a named pipe, a slow disk,
// a large scenario). The abandoned read goes on in its goroutine until the
// file gives way; the process is about to exit anyway.
func ResolveContext(ctx context.Context, arg string) (*Scenario, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	type result struct {
		s     *Scenario
		err   error
		panic any
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				// Panic again in the caller's goroutine, where dqbench's
				// guard catches it.
				done <- result{panic: fmt.Sprintf("%v\n\n%s", r, debug.Stack())}
			}
		}()
		s, err := Resolve(arg)
		done <- result{s: s, err: err}
	}()
	select {
	case r := <-done:
		if r.panic != nil {
			panic(r.panic)
		}
		return r.s, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Load reads and parses the scenario file at path.
func Load(path string) (*Scenario, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read scenario: %w", err)
	}
	defer f.Close()
	// Read one byte past the limit, so that Parse can tell the file is too
	// large without reading all of it.
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read scenario: %w", err)
	}
	return Parse(path, data)
}

// Parse parses, checks and completes the scenario in data, read from file
// (used in messages). On failure the error is an Errors listing every
// problem found, each at file:line:col.
func Parse(file string, data []byte) (*Scenario, error) {
	text := bytes.TrimPrefix(data, []byte(byteOrderMark)) // editors on Windows write one
	if err := prescan(file, text); err != nil {
		return nil, err
	}
	root, problems, err := parseYAML(file, text)
	if err != nil {
		return nil, err
	}
	d := newDecoder(file, root)
	d.errs = problems
	var s Scenario
	d.decode("", root, reflect.ValueOf(&s).Elem())
	if d.overflow != nil {
		return nil, Errors{d.overflow}
	}
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

// byteOrderMark is the UTF-8 encoding of U+FEFF, which some editors write
// at the start of a file.
const byteOrderMark = "\ufeff"

// parseYAML returns the body of the first YAML document in data, and a
// problem to report with the others if there is a second one. Duplicate
// keys are left to the decoder, which reports them with the others too.
func parseYAML(file string, data []byte) (root ast.Node, problems Errors, err error) {
	defer func() {
		// The YAML parser is a dependency; a bug in it must not crash dqbench.
		if r := recover(); r != nil {
			root, problems, err = nil, nil, Errors{{File: file, Line: 1, Col: 1, Msg: "cannot parse YAML: " + clip(fmt.Sprint(r))}}
		}
	}()
	f, err := parser.ParseBytes(data, 0, parser.AllowDuplicateMapKey())
	if err != nil {
		return nil, nil, syntaxError(file, err)
	}
	var docs []ast.Node
	for _, doc := range f.Docs {
		if doc != nil && !isNil(doc.Body) {
			docs = append(docs, doc.Body)
		}
	}
	if len(docs) == 0 {
		return nil, nil, Errors{{File: file, Line: 1, Col: 1, Msg: "empty scenario: start with version: 1, then name, broker and variants"}}
	}
	if len(docs) > 1 {
		line, col, _ := nodePos(docs[1])
		problems = Errors{{File: file, Line: max(line, 1), Col: max(col, 1),
			Msg: "a second YAML document (after ---): a file holds one scenario; remove the ---, or split the file"}}
	}
	return docs[0], problems, nil
}

// syntaxError turns the YAML parser's error into an Errors at its position.
func syntaxError(file string, err error) error {
	// The parser's messages are short, but may hold a character of the input.
	e := &Error{File: file, Line: 1, Col: 1, Msg: "YAML syntax error: " + clip(err.Error())}
	var ye yaml.Error
	if errors.As(err, &ye) {
		e.Msg = "YAML syntax error: " + clip(ye.GetMessage())
		if tk := ye.GetToken(); tk != nil && tk.Position != nil && tk.Position.Line > 0 {
			e.Line, e.Col = tk.Position.Line, max(tk.Position.Column, 1)
		}
	}
	return Errors{e}
}

// Bounds on the text given to the YAML parser, whose time and memory grow
// with the square of the nesting depth (100 KB of nested [[[...]]] took a
// minute and gigabytes) and are large even without nesting: 256 KiB of the
// worst text within MaxNesting takes about a second and 110 MB. Scenario
// files are a few KiB.
const (
	MaxFileSize = 256 << 10 // bytes
	MaxNesting  = 64        // lists and mappings inside each other
)

// prescan rejects, before the YAML parser sees it, a scenario larger than
// MaxFileSize or nested deeper than MaxNesting, counting flow collections
// ([ and {) and block indentation levels in one cheap pass over the bytes.
// It errs on the side of counting: a bracket it cannot tell apart from
// structure (in a block scalar's text, say) counts as nesting.
func prescan(file string, data []byte) error {
	if len(data) > MaxFileSize {
		return Errors{{File: file, Line: 1, Col: 1,
			Msg: fmt.Sprintf("file is larger than %d KiB; a scenario file may be at most %d KiB", MaxFileSize>>10, MaxFileSize>>10)}}
	}
	if err := checkText(file, data); err != nil {
		return err
	}
	var (
		flow    int   // [ and { open
		indents []int // columns of the enclosing block collections
		quote   byte  // the quote a quoted scalar opened with, or 0
		block   = -1  // indent of the line that started a | or > scalar, or -1
	)
	tooDeep := func(line, col int) error {
		return Errors{{File: file, Line: line, Col: col,
			Msg: fmt.Sprintf("nested too deeply: more than %d lists and mappings inside each other", MaxNesting)}}
	}
	for n, rest := 1, data; len(rest) > 0; n++ {
		l := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			l, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		l = bytes.TrimSuffix(l, []byte("\r"))
		indent := len(l) - len(bytes.TrimLeft(l, " "))
		blank := indent == len(l) || l[indent] == '#'
		if block >= 0 {
			if blank || indent > block {
				continue // a line of the block scalar's text
			}
			block = -1
		}
		j := 0
		atStart := true // a node may start here, so a quote opens a quoted scalar
		if quote == 0 && flow == 0 && !blank {
			// Block structure: the line's indentation, then each "- " or "? "
			// opens one more level.
			j = indent
			for {
				for len(indents) > 0 && indents[len(indents)-1] >= j {
					indents = indents[:len(indents)-1]
				}
				indents = append(indents, j)
				if len(indents) > MaxNesting {
					return tooDeep(n, j+1)
				}
				if j+1 >= len(l) || l[j] != '-' && l[j] != '?' || l[j+1] != ' ' {
					break
				}
				j += 2
				for j < len(l) && l[j] == ' ' {
					j++
				}
			}
		}
		prop := false // in an anchor (&a) or tag (!t) that started a node
		json := false // after a quoted scalar or a flow collection: "a":"b" is a pair
		for k := j; k < len(l); k++ {
			c := l[k]
			switch {
			case quote == '\'':
				if c == '\'' && k+1 < len(l) && l[k+1] == '\'' {
					k++
				} else if c == '\'' {
					quote, atStart, json = 0, false, true
				}
				continue
			case quote == '"':
				if c == '\\' {
					k++
				} else if c == '"' {
					quote, atStart, json = 0, false, true
				}
				continue
			}
			switch c {
			case ' ', '\t':
				if prop {
					prop, atStart = false, true
				}
				continue
			case '#':
				if k == 0 || l[k-1] == ' ' || l[k-1] == '\t' {
					k = len(l) // a comment
					continue
				}
			case '[', '{':
				flow++
				if len(indents)+flow > MaxNesting {
					return tooDeep(n, k+1)
				}
				atStart = true
				continue
			case ']', '}':
				flow = max(flow-1, 0)
				atStart, json = false, true
				continue
			case ',':
				if flow > 0 {
					atStart = true
					continue
				}
			case ':':
				if json || k+1 == len(l) || l[k+1] == ' ' || l[k+1] == '\t' {
					atStart = true
					continue
				}
			case '\'', '"':
				if atStart {
					quote = c
					continue
				}
			case '&', '!':
				if atStart {
					prop = true
					continue
				}
			case '|', '>':
				if atStart && flow == 0 {
					block = indent
					k = len(l) // the header; the text follows on the next lines
					continue
				}
			}
			if !prop {
				atStart, json = false, false
			}
		}
	}
	return nil
}

// checkText rejects data that is not text, at the first byte that is not:
// a NUL, bytes that are not UTF-8, or a control character (other than tab
// and line ends), which YAML does not allow either. Otherwise the YAML
// parser's message would repeat the binary.
func checkText(file string, data []byte) error {
	line, col := 1, 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		why := ""
		switch {
		case r == utf8.RuneError && size == 1:
			why = "bytes that are not UTF-8"
		case r == 0:
			why = "a NUL byte"
		case r == '\n':
			line, col = line+1, 0
		case r != '\t' && r != '\r' && unicode.IsControl(r):
			why = fmt.Sprintf("the control character %U", r)
		}
		if why != "" {
			return Errors{{File: file, Line: line, Col: col,
				Msg: "not a text file: it holds " + why + "; a scenario is a YAML text file in UTF-8"}}
		}
		i += size
		col++
	}
	return nil
}
