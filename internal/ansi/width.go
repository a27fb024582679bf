package ansi

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/clipperhouse/displaywidth"
)

// code is an ANSI colour sequence: no width on a terminal.
var code = regexp.MustCompile("\x1b\\[[0-9;]*m")

// Width is how many terminal columns s takes, colour codes left out; for
// text of several lines, the widest line.
func Width(s string) int {
	n := 0
	for _, l := range strings.Split(s, "\n") {
		n = max(n, displaywidth.String(code.ReplaceAllString(l, "")))
	}
	return n
}

// Wrap breaks the line s at spaces into lines of at most width terminal
// columns, each after the first starting with indent. A word longer than
// a whole line is cut where it must be (never inside a colour code).
// Width 0 or less keeps s whole.
func Wrap(s string, width int, indent string) []string {
	if width <= 0 || Width(s) <= width {
		return []string{s}
	}
	if Width(indent) >= width/2 {
		indent = "" // an indent that leaves no room is dropped
	}
	var lines []string
	line, fresh := "", true // fresh: nothing but the indent on line yet
	for i, w := range strings.Split(s, " ") {
		switch {
		case i == 0:
			line, fresh = w, w == ""
		case fresh && w == "" && len(lines) > 0:
			continue // the double space of a break
		case fresh && len(lines) > 0:
			line += w
			fresh = false
		case Width(line+" "+w) <= width:
			line += " " + w
			fresh = false
		default:
			lines = append(lines, line)
			line, fresh = indent+w, w == ""
		}
		for Width(line) > width { // a word longer than a line
			head, rest := cut(line, width)
			lines = append(lines, head)
			line, fresh = indent+rest, rest == ""
		}
	}
	return append(lines, line)
}

// cut splits s after at most width columns, never inside a colour code.
func cut(s string, width int) (string, string) {
	n := 0
	for i := 0; i < len(s); {
		if loc := code.FindStringIndex(s[i:]); loc != nil && loc[0] == 0 {
			i += loc[1]
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		rw := displaywidth.Rune(r)
		if n+rw > width && n > 0 {
			return s[:i], s[i:]
		}
		n += rw
		i += size
	}
	return s, ""
}
