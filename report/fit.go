package report

import (
	"slices"
	"strings"

	"github.com/dqbench/dqbench/check"
	"github.com/dqbench/dqbench/internal/ansi"
)

// stacked renders cols as tables one under the other, for a terminal too
// narrow for one: each table has the name columns (variant, and strategy
// when cols has it) and the next count columns, in order, as many as fit
// width, the counts shared out evenly between the tables. Padded cells
// when every table fits so, else unpadded. A name column wider than the
// terminal still overflows it: nothing narrower can be drawn.
func stacked(r check.Run, cols []column, width int, p ansi.Paint) (string, error) {
	var names, nums []column
	for _, c := range cols {
		if c.cell == nil {
			names = append(names, c)
		} else {
			nums = append(nums, c)
		}
	}
	var parts []string
	for _, padding := range []bool{true, false} {
		groups, err := share(r, names, nums, width, p, padding)
		if err != nil {
			return "", err
		}
		parts = parts[:0]
		fits := true
		for _, g := range groups {
			out, err := render(r, append(slices.Clone(names), g...), false, p, padding)
			if err != nil {
				return "", err
			}
			parts = append(parts, out)
			fits = fits && ansi.Width(out) <= width
		}
		if fits {
			break
		}
	}
	return strings.Join(parts, ""), nil
}

// share splits nums into as few consecutive groups as fit width beside
// names, then evens the groups out (5 and 3 columns rather than 7 and 1)
// when the even split fits too.
func share(r check.Run, names, nums []column, width int, p ansi.Paint, padding bool) ([][]column, error) {
	fits := func(g []column) (bool, error) {
		out, err := render(r, append(slices.Clone(names), g...), false, p, padding)
		return ansi.Width(out) <= width, err
	}
	var greedy [][]column
	for i := 0; i < len(nums); {
		n := 1
		for i+n < len(nums) {
			ok, err := fits(nums[i : i+n+1])
			if err != nil {
				return nil, err
			}
			if !ok {
				break
			}
			n++
		}
		greedy = append(greedy, nums[i:i+n])
		i += n
	}
	k := len(greedy)
	if k < 2 {
		return greedy, nil
	}
	var even [][]column
	for i := range k {
		g := nums[i*len(nums)/k : (i+1)*len(nums)/k]
		ok, err := fits(g)
		if err != nil {
			return nil, err
		}
		if !ok {
			return greedy, nil
		}
		even = append(even, g)
	}
	return even, nil
}
