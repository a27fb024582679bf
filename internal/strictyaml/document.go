package strictyaml

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// Read returns the body of the one YAML document in data, read from file,
// after the checks that keep the YAML parser safe: size, nesting depth and
// text (see prescan and checkText). A problem the decoder should report
// with its own (a second document) comes back in problems; err means there
// is nothing to decode. emptyHint completes "empty ..." for an empty file.
func Read(file string, data []byte, emptyHint string) (root ast.Node, problems Errors, err error) {
	text := bytes.TrimPrefix(data, []byte(byteOrderMark)) // editors on Windows write one
	if err := prescan(file, text); err != nil {
		return nil, nil, err
	}
	return parseYAML(file, text, emptyHint)
}

// byteOrderMark is the UTF-8 encoding of U+FEFF, which some editors write
// at the start of a file.
const byteOrderMark = "\ufeff"

// parseYAML returns the body of the first YAML document in data, and a
// problem to report with the others if there is a second one. Duplicate
// keys are left to the decoder, which reports them with the others too.
func parseYAML(file string, data []byte, emptyHint string) (root ast.Node, problems Errors, err error) {
	defer func() {
		// The YAML parser is a dependency; a bug in it must not crash dqbench.
		if r := recover(); r != nil {
			root, problems, err = nil, nil, Errors{{File: file, Line: 1, Col: 1, Msg: "cannot parse YAML: " + Clip(fmt.Sprint(r))}}
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
		return nil, nil, Errors{{File: file, Line: 1, Col: 1, Msg: "empty " + emptyHint}}
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
	e := &Error{File: file, Line: 1, Col: 1, Msg: "YAML syntax error: " + Clip(err.Error())}
	var ye yaml.Error
	if errors.As(err, &ye) {
		e.Msg = "YAML syntax error: " + Clip(ye.GetMessage())
		if tk := ye.GetToken(); tk != nil && tk.Position != nil && tk.Position.Line > 0 {
			e.Line, e.Col = tk.Position.Line, max(tk.Position.Column, 1)
		}
	}
	if strings.Contains(e.Msg, "header option") {
		// An unquoted > or | starts a block scalar: lost: >0.
		e.Msg += `; a value that starts with > or | must be quoted: write a comparison as lost: ">0" or duplicates: ">= 1"`
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
