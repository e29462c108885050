package common

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/locktui/locktui/internal/textfmt"
	"github.com/locktui/locktui/provider"
)

// TTL formats a time to live for a table cell: tenths of a second under a minute so the
// countdown moves smoothly, cut down (never rounded up: a countdown does not overstate what is
// left), textfmt.NoExpiry for a key without expiry.
func TTL(d time.Duration) string {
	switch {
	case d == provider.NoExpiry:
		return textfmt.NoExpiry
	case d < time.Minute:
		return tenths(d.Truncate(100*time.Millisecond)) + "s"
	}
	return Duration(d)
}

// Lease formats the length of a lease: tenths of a second under a minute (a 0.8 s lease is
// not "0s"), else as Duration.
func Lease(d time.Duration) string {
	if d < time.Minute {
		return tenths(d.Round(100*time.Millisecond)) + "s"
	}
	return Duration(d)
}

func tenths(d time.Duration) string { return strconv.FormatFloat(max(d, 0).Seconds(), 'f', 1, 64) }

// Duration formats a duration compactly: 42s, 4m03s, 2h05m, 3d04h.
func Duration(d time.Duration) string {
	d = max(d, 0)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd%02dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}

// Latency formats a round-trip time: 0.42ms, 12ms, 1.2s.
func Latency(d time.Duration) string {
	switch {
	case d < 10*time.Millisecond:
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64) + "ms"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
}

// Rate formats events per second: "-" for none, 0.3/s, 12/s.
func Rate(r float64) string {
	switch {
	case r <= 0:
		return "-"
	case r < 10:
		return strconv.FormatFloat(r, 'f', 1, 64) + "/s"
	}
	return strconv.FormatFloat(r, 'f', 0, 64) + "/s"
}

// Fit truncates s to width display cells (with "…") and pads it with spaces to exactly width.
func Fit(s string, width int) string {
	if width <= 0 {
		return ""
	}
	w := ansi.StringWidth(s)
	if w > width {
		s = ansi.Truncate(s, width, "…")
		w = ansi.StringWidth(s)
	}
	return s + strings.Repeat(" ", width-w)
}

// FitRight is Fit aligned right.
func FitRight(s string, width int) string {
	if width <= 0 {
		return ""
	}
	w := ansi.StringWidth(s)
	if w > width {
		return ansi.Truncate(s, width, "…")
	}
	return strings.Repeat(" ", width-w) + s
}

// FitMiddle is Fit that shortens s in the middle ("inventory:it…01JK4KH3"), keeping its start
// and its end: keys and owner ids that share a prefix differ at their end.
func FitMiddle(s string, width int) string {
	return Fit(Middle(s, width), width)
}

// Middle cuts s to width display cells by replacing its middle with "…", without padding.
func Middle(s string, width int) string {
	if width <= 0 {
		return ""
	}
	if ansi.StringWidth(s) <= width {
		return s
	}
	if width < 3 {
		return ansi.Truncate(s, width, "…")
	}
	keep := width - 1
	head := keep / 2
	tail := keep - head
	return ansi.Cut(s, 0, head) + "…" + ansi.Cut(s, ansi.StringWidth(s)-tail, ansi.StringWidth(s))
}

// Truncate cuts s to width display cells, with "…", without padding.
func Truncate(s string, width int) string {
	if ansi.StringWidth(s) <= width {
		return s
	}
	return ansi.Truncate(s, max(width, 0), "…")
}

// Held formats how long a lock has been held (store.Entry.HeldFor): exact from its holder
// record, else how long the console has seen it, marked "≥" (the hold may be older).
func Held(held time.Duration, exact bool) string {
	if exact {
		return Duration(held)
	}
	return "≥" + Duration(held)
}
