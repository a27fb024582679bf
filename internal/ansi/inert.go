package ansi

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Inert makes text that did not come from dqbench (a process's stderr, a
// saved run's history or scenario) safe to print on a terminal: control
// characters other than newline and tab, whose escape sequences would move
// the cursor, clear the screen or retitle the window, and invalid UTF-8
// are shown escaped. "\x1b[2J" prints as `\x1b[2J`, not as a cleared
// screen.
func Inert(s string) string {
	if isInert(s) {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029':
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isInert: s holds printable ASCII, newlines and tabs only (the common
// case, returned as it is).
func isInert(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < ' ' && c != '\n' && c != '\t') || c >= 0x7f {
			return false
		}
	}
	return true
}
