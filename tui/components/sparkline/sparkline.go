// Package sparkline draws a series of counts as one line of block characters.
package sparkline

import "strings"

var levels = []rune("▁▂▃▄▅▆▇█")

// Render draws the last width values of series, scaled to their maximum; a zero is a space, any
// other value at least the lowest block, so activity is never invisible.
func Render(series []int, width int) string {
	if width <= 0 {
		return ""
	}
	if len(series) > width {
		series = series[len(series)-width:]
	}
	top := 0
	for _, v := range series {
		top = max(top, v)
	}
	var b strings.Builder
	b.WriteString(strings.Repeat(" ", width-len(series)))
	for _, v := range series {
		if v <= 0 || top == 0 {
			b.WriteByte(' ')
			continue
		}
		i := (v*len(levels) - 1) / top
		b.WriteRune(levels[min(i, len(levels)-1)])
	}
	return b.String()
}

// Max returns the largest value of series.
func Max(series []int) int {
	top := 0
	for _, v := range series {
		top = max(top, v)
	}
	return top
}
