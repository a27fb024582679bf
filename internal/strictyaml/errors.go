package strictyaml

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Error is one problem in a scenario file, at the position of the offending
// key or value.
type Error struct {
	File      string
	Line, Col int
	Msg       string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

// Errors is every problem found in one scenario file, in file order.
type Errors []*Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As find the individual *Error values.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// sorted returns es in file order without duplicates (an alias used twice
// can report the same problem twice).
func (es Errors) Sorted() Errors {
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].Line != es[j].Line {
			return es[i].Line < es[j].Line
		}
		return es[i].Col < es[j].Col
	})
	out := es[:0]
	seen := map[Error]bool{}
	for _, e := range es {
		if !seen[*e] {
			seen[*e] = true
			out = append(out, e)
		}
	}
	return out
}

// maxEcho is the most characters of the input that a message repeats: a
// value can be a whole file long.
const maxEcho = 80

// Echo renders input for a message: quoted, with control characters
// escaped, and cut to maxEcho characters ("..." after the quote says so).
func Echo(s string) string {
	short, cut := cutEcho(s)
	q := strconv.Quote(short)
	if cut {
		q += "..."
	}
	return q
}

// Clip is Echo without the quotes, for input shown as it is (a number).
func Clip(s string) string {
	short, cut := cutEcho(s)
	if strings.ContainsFunc(short, unicode.IsControl) || !utf8.ValidString(short) {
		q := strconv.Quote(short)
		short = q[1 : len(q)-1]
	}
	if cut {
		short += "..."
	}
	return short
}

func cutEcho(s string) (string, bool) {
	if utf8.RuneCountInString(s) <= maxEcho {
		return s, false
	}
	return string([]rune(s)[:maxEcho]), true
}

// Suggest returns the candidate nearest to s by edit distance, if it is
// close enough to be a likely typo.
func Suggest(s string, candidates []string) (string, bool) {
	best, bestDist := "", -1
	for _, c := range candidates {
		d := editDistance(strings.ToLower(s), strings.ToLower(c))
		if bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	if bestDist < 0 || bestDist >= max(len(s), len(best)) {
		return "", false
	}
	// A typo is a few edits, or a right start with a fumbled end
	// ("stratgies" for "strategy").
	if bestDist <= max(2, len(s)/3) || commonPrefix(s, best) >= 4 && bestDist <= len(s)/2 {
		return best, true
	}
	return "", false
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// DidYouMean renders a suggestion suffix for a message, or "".
func DidYouMean(s string, candidates []string) string {
	if c, ok := Suggest(s, candidates); ok {
		return fmt.Sprintf("; did you mean %q?", c)
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Thousands renders n with commas between groups of three digits: 10,000,000.
func Thousands(n int) string {
	s := strconv.Itoa(n)
	sign := ""
	if s[0] == '-' {
		sign, s = "-", s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return sign + s
}
