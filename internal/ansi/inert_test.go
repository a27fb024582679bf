package ansi

import "testing"

func TestInert(t *testing.T) {
	for in, want := range map[string]string{
		"plain 0@35":          "plain 0@35",
		"a\tb\nc":             "a\tb\nc",
		"\x1b[2Jcleared":      `\x1b[2Jcleared`,
		"\x1b]0;title\x07":    `\x1b]0;title\a`,
		"bad \xff byte":       `bad \xff byte`,
		"line\u2028sep":       `line\u2028sep`,
		"ünïcödé \uFFFD kept": "ünïcödé \uFFFD kept",
		"\u009b31m":           `\u009b31m`,
	} {
		if got := Inert(in); got != want {
			t.Errorf("Inert(%q) = %q, want %q", in, got, want)
		}
	}
}
