// Package textfmt formats values for people the same way in the CLI's output (internal/cli) and
// in the console (tui): a package below both, so that neither imports the other for a helper.
package textfmt

import (
	"strconv"
	"strings"
)

// NoExpiry is how a time to live that never ends reads, in the console as in the CLI.
const NoExpiry = "no expiry"

// Count formats an integer with thousands separators: 100,000.
func Count(n int) string {
	s := strconv.Itoa(n)
	var b strings.Builder
	if n < 0 {
		b.WriteByte('-')
		s = s[1:]
	}
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}
