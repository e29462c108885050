package lockwire

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable shows a key, an owner id or a field of a holder record as is when it is plain, and
// quoted in Go syntax (control characters escaped) when it is empty, holds spaces, characters
// that do not print or bytes that are not UTF-8, or starts with a quote (operator.Printable).
func Printable(s string) string {
	if s == "" || s[0] == '"' || !utf8.ValidString(s) ||
		strings.ContainsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) {
		return strconv.Quote(s)
	}
	return s
}
