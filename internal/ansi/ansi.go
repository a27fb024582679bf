// Package ansi colours text for a terminal, and does nothing otherwise.
package ansi

// Paint colours text when it is true: on a terminal, without NO_COLOR.
type Paint bool

func (p Paint) code(code, s string) string {
	if !p || s == "" {
		return s
	}
	return "\033[" + code + "m" + s + "\033[0m"
}

// Bold, Red, Green and Yellow wrap s in that style.
func (p Paint) Bold(s string) string   { return p.code("1", s) }
func (p Paint) Red(s string) string    { return p.code("31", s) }
func (p Paint) Green(s string) string  { return p.code("32", s) }
func (p Paint) Yellow(s string) string { return p.code("33", s) }
