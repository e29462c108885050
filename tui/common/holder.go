package common

import (
	"strconv"

	"github.com/charmbracelet/x/ansi"

	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
)

// Holder names a holder record's process in a table cell of width cells: program/pid@host,
// "?" for what is not known, program and host through operator.Printable. When it does not fit,
// the host gives way first (shortened in its middle, then dropped), then the program (in its
// middle); the pid stays whole: it is what tells two workers of one program apart.
func Holder(h provider.Holder, width int) string {
	program, host, pid := operator.Printable(h.Program), operator.Printable(h.Host), "?"
	if h.Program == "" {
		program = "?"
	}
	if h.Host == "" {
		host = "?"
	}
	if h.PID > 0 {
		pid = strconv.Itoa(h.PID)
	}
	head := program + "/" + pid
	full := head + "@" + host
	if ansi.StringWidth(full) <= width {
		return full
	}
	const minHost = 4 // "@" and three cells of host ("i…4") say more than nothing
	if room := width - ansi.StringWidth(head) - 1; room >= minHost-1 {
		return head + "@" + Middle(host, room)
	}
	return Middle(program, width-len(pid)-1) + "/" + pid
}
