// Package glob matches strings against Redis glob patterns, as the console's filter and
// locktui list --match do, without asking Redis.
package glob

import "unicode/utf8"

// Match reports whether s matches the Redis-style glob pattern (the syntax of SCAN MATCH and
// KEYS): * matches any run of characters and ? any one character, including '/' and ':';
// [abc], [^a] and [a-z] match one character of a class; \x matches x literally. An unclosed '['
// matches itself. The match is case-sensitive and covers the whole of s.
func Match(pattern, s string) bool {
	for len(pattern) > 0 {
		switch pattern[0] {
		case '*':
			for len(pattern) > 1 && pattern[1] == '*' {
				pattern = pattern[1:]
			}
			if len(pattern) == 1 {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if Match(pattern[1:], s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if len(s) == 0 {
				return false
			}
			_, size := decodeRune(s)
			s = s[size:]
			pattern = pattern[1:]
		case '[':
			if len(s) == 0 {
				return false
			}
			r, size := decodeRune(s)
			ok, rest, valid := matchClass(pattern[1:], r)
			if !valid {
				// An unclosed '[' matches itself.
				if s[0] != '[' {
					return false
				}
				s, pattern = s[1:], pattern[1:]
				continue
			}
			if !ok {
				return false
			}
			s, pattern = s[size:], rest
		case '\\':
			if len(pattern) > 1 {
				pattern = pattern[1:]
			}
			fallthrough
		default:
			if len(s) == 0 || s[0] != pattern[0] {
				return false
			}
			s, pattern = s[1:], pattern[1:]
		}
	}
	return len(s) == 0
}

// matchClass matches r against the class after '[' and returns the pattern after ']'.
func matchClass(p string, r rune) (matched bool, rest string, valid bool) {
	negate := false
	if len(p) > 0 && p[0] == '^' {
		negate, p = true, p[1:]
	}
	first := true
	for len(p) > 0 {
		if p[0] == ']' && !first {
			return matched != negate, p[1:], true
		}
		first = false
		lo, size := decodeRune(p)
		if lo == '\\' && len(p) > 1 {
			p = p[1:]
			lo, size = decodeRune(p)
		}
		p = p[size:]
		hi := lo
		if len(p) > 1 && p[0] == '-' && p[1] != ']' {
			hi, size = decodeRune(p[1:])
			p = p[1+size:]
		}
		if lo > hi {
			lo, hi = hi, lo
		}
		if lo <= r && r <= hi {
			matched = true
		}
	}
	return false, "", false
}

func decodeRune(s string) (rune, int) { return utf8.DecodeRuneInString(s) }
