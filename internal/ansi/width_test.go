package ansi

import (
	"strings"
	"testing"
)

func TestWidth(t *testing.T) {
	for s, want := range map[string]int{
		"":                          0,
		"abc":                       3,
		"a · b → c":                 9,
		"\x1b[31mred\x1b[0m":        3,
		"two\nlines, the wider one": 20,
		"中文":                        4,
	} {
		if got := Width(s); got != want {
			t.Errorf("Width(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestWrap(t *testing.T) {
	for _, tc := range []struct {
		s      string
		width  int
		indent string
		want   []string
	}{
		{"fits", 10, "  ", []string{"fits"}},
		{"no width keeps it whole", 0, "  ", []string{"no width keeps it whole"}},
		{"one two three four five", 10, "  ", []string{"one two", "  three", "  four", "  five"}},
		{"  why: keeps its own indent here", 16, "    ", []string{"  why: keeps its", "    own indent", "    here"}},
		{"PASS  seed 1 · 2000 messages", 12, "", []string{"PASS  seed 1", "· 2000", "messages"}},
		{"a verylongwordthatcannotfit b", 10, "  ", []string{"a", "  verylong", "  wordthat", "  cannotfi", "  t b"}},
		{"\x1b[31mFAIL\x1b[0m none: lost == 0", 12, "  ", []string{"\x1b[31mFAIL\x1b[0m none:", "  lost == 0"}},
		{"xxxxxxxxxxxxxxxxxxxxxxxx", 10, "", []string{"xxxxxxxxxx", "xxxxxxxxxx", "xxxx"}},
	} {
		got := Wrap(tc.s, tc.width, tc.indent)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("Wrap(%q, %d, %q) = %q, want %q", tc.s, tc.width, tc.indent, got, tc.want)
		}
		for _, l := range got {
			if tc.width > 0 && Width(l) > tc.width {
				t.Errorf("Wrap(%q, %d): line %q is %d wide", tc.s, tc.width, l, Width(l))
			}
		}
	}
}
