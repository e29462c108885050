package store

import (
	"strconv"
	"strings"

	"github.com/locktui/locktui/internal/glob"
)

// OwnerPrefix starts a filter on owners instead of keys: "owner:execute:*".
const OwnerPrefix = "owner:"

// HolderPrefix starts a filter on the process holding the lock: "holder:web-1" selects the
// locks whose holder record names a process on host web-1 (see holderText for what is
// matched: program, pid, host and client kind, as the detail shows them); "holder:stock"
// selects the locks without record.
const HolderPrefix = "holder:"

// Filter selects rows by key, by owner when written with OwnerPrefix, or by holding process
// when written with HolderPrefix. The pattern is a glob (Redis MATCH syntax: * ? [abc] [^a]
// [a-z] \x) when it contains * ? or [, an exact match when it starts with "=" or is written
// quoted as the console shows keys and owners ("" is the empty owner), a substring otherwise;
// all ignore case. A pattern that starts with Literal is taken literally: neither a field
// prefix, "=" nor a quote after it means anything (\=cart is the substring =cart of keys,
// \owner:1 the substring owner:1 of keys); in a glob the backslash stays, escaping the
// character after it as in Redis MATCH. The zero Filter matches everything.
type Filter struct {
	pattern string // lower case
	owner   bool
	holder  bool
	glob    bool
	exact   bool
}

// Literal, typed first, makes the rest of a filter (or of the pattern after OwnerPrefix or
// HolderPrefix) plain text to match, so a key that reads like filter syntax (=cart, owner:1,
// "x) can be filtered for.
const Literal = `\`

// cutField splits what the user typed into the field it names (OwnerPrefix or HolderPrefix,
// any case; "" for keys) and the pattern after it, as typed.
func cutField(s string) (field, pattern string) {
	s = strings.TrimSpace(s)
	for _, prefix := range []string{OwnerPrefix, HolderPrefix} {
		if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
			return prefix, strings.TrimSpace(s[len(prefix):])
		}
	}
	return "", s
}

// unquote returns the text a pattern written as a Go-quoted string stands for: the console
// shows keys and owners that are empty or hold spaces or control characters that way
// (operator.Printable), so "" is the empty owner and "svc one" the owner svc one. ok is false
// for any other pattern, which is taken as typed.
func unquote(pattern string) (text string, ok bool) {
	if len(pattern) < 2 || pattern[0] != '"' {
		return "", false
	}
	text, err := strconv.Unquote(pattern)
	return text, err == nil
}

// ParseFilter parses what the user typed after "/". A pattern written quoted, as the console
// shows keys and owners that are empty or hold spaces or control characters, matches its
// unquoted text exactly (with or without "=").
func ParseFilter(s string) Filter {
	field, s := cutField(s)
	f := Filter{owner: field == OwnerPrefix, holder: field == HolderPrefix}
	if rest, ok := strings.CutPrefix(s, Literal); ok {
		f.pattern = strings.ToLower(s)
		if f.glob = strings.ContainsAny(rest, "*?["); !f.glob {
			f.pattern = strings.ToLower(rest)
		}
		return f
	}
	if rest, ok := strings.CutPrefix(s, "="); ok {
		if text, quoted := unquote(rest); quoted {
			rest = text
		}
		f.exact, f.pattern = true, strings.ToLower(rest)
		return f
	}
	if text, quoted := unquote(s); quoted {
		f.exact, f.pattern = true, strings.ToLower(text)
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
	switch {
	case f.owner:
		return !e.Foreign && f.matchString(e.ownerLower) // a key of another type has no owner
	case f.holder:
		return !e.Foreign && f.matchString(e.holderLower)
	}
	return f.matchString(e.keyLower)
}

// MatchOwner reports whether an owner id passes an owner filter (a key or holder filter
// passes any).
func (f Filter) MatchOwner(owner string) bool {
	if f.Empty() || !f.owner {
		return true
	}
	return f.matchString(strings.ToLower(owner))
}

// MatchKey reports whether a key passes a key filter (an owner or holder filter passes any
// key).
func (f Filter) MatchKey(key string) bool {
	if f.Empty() || f.owner || f.holder {
		return true
	}
	return f.matchString(strings.ToLower(key))
}

// ExactKey returns the key a filter names exactly (=cart:1 names "cart:1", as typed: Redis
// keys are case-sensitive; ="with space" and "with space", quoted, name the key with space),
// so the console can read it at once instead of waiting for a scan.
func ExactKey(filter string) (key string, ok bool) {
	field, s := cutField(filter)
	if field != "" {
		return "", false
	}
	key, ok = strings.CutPrefix(s, "=")
	if text, quoted := unquote(key); quoted {
		key, ok = text, true
	}
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
