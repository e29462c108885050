package store

import (
	"strings"

	"github.com/locktui/locktui/internal/glob"
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
		return glob.Match(f.pattern, s)
	}
	return strings.Contains(s, f.pattern)
}
