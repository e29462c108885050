package store

import (
	"strings"
	"unicode/utf8"
)

// OwnerPrefix starts a filter on owners instead of keys: "owner:execute:*".
const OwnerPrefix = "owner:"

// Filter selects rows by key, or by owner when written with OwnerPrefix. The pattern is a glob
// (Redis MATCH syntax: * ? [abc] [^a] [a-z] \x) when it contains * ? or [, an exact match when
// it starts with "=", a substring otherwise; all ignore case. The zero Filter matches
// everything.
type Filter struct {
	pattern string // lower case
	owner   bool
	glob    bool
	exact   bool
}

// ParseFilter parses what the user typed after "/".
func ParseFilter(s string) Filter {
	s = strings.TrimSpace(s)
	f := Filter{}
	if strings.HasPrefix(strings.ToLower(s), OwnerPrefix) {
		f.owner = true
		s = strings.TrimSpace(s[len(OwnerPrefix):])
	}
	if rest, ok := strings.CutPrefix(s, "="); ok {
		f.exact, f.pattern = true, strings.ToLower(rest)
		return f
	}
	f.pattern = strings.ToLower(s)
	f.glob = strings.ContainsAny(f.pattern, "*?[")
	return f
}

// Empty reports whether the filter matches everything.
func (f Filter) Empty() bool { return f.pattern == "" && !f.exact }

// Owner reports whether the filter selects owners rather than keys.
func (f Filter) Owner() bool { return f.owner }

// Match reports whether e passes the filter.
func (f Filter) Match(e *Entry) bool {
	if f.Empty() {
		return true
	}
	if f.owner {
		return f.matchString(e.ownerLower)
	}
	return f.matchString(e.keyLower)
}

// MatchOwner reports whether an owner id passes an owner filter (a key filter passes any).
func (f Filter) MatchOwner(owner string) bool {
	if f.Empty() || !f.owner {
		return true
	}
	return f.matchString(strings.ToLower(owner))
}

// MatchKey reports whether a key passes a key filter (an owner filter passes any key).
func (f Filter) MatchKey(key string) bool {
	if f.Empty() || f.owner {
		return true
	}
	return f.matchString(strings.ToLower(key))
}

// ExactKey returns the key a filter names exactly ("=cart:1" names "cart:1", as typed: Redis
// keys are case-sensitive), so the console can read it at once instead of waiting for a scan.
func ExactKey(filter string) (key string, ok bool) {
	s := strings.TrimSpace(filter)
	if strings.HasPrefix(strings.ToLower(s), OwnerPrefix) {
		return "", false
	}
	key, ok = strings.CutPrefix(s, "=")
	return key, ok && key != ""
}

// Exact returns the filter that matches exactly one owner id (or one key).
func Exact(owner bool, s string) string {
	if owner {
		return OwnerPrefix + "=" + s
	}
	return "=" + s
}

func (f Filter) matchString(s string) bool {
	if f.exact {
		return s == f.pattern
	}
	if f.glob {
		return globMatch(f.pattern, s)
	}
	return strings.Contains(s, f.pattern)
}

// globMatch matches s against a Redis-style glob pattern; * and ? match any character,
// including '/' and ':'.
func globMatch(pattern, s string) bool {
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
				if globMatch(pattern[1:], s[i:]) {
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
