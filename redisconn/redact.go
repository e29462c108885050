package redisconn

import (
	"errors"
	"net/url"
	"slices"
	"strings"
)

// mask stands for a password wherever a URL is shown (the same as url.URL.Redacted's).
const mask = "xxxxx"

// redact returns rawURL with every password masked, for messages and logs. A URL that parses is
// shown with url.URL.Redacted; one that does not is never echoed as it is: everything between
// "://" and the last "@" is masked, so a password that broke the parser is hidden too.
// Query values named like a password (go-redis's Sentinel URLs take password=) and values that
// carry a user (addr=user:pass@host) are masked as well.
func redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Opaque != "" {
		// An opaque URL is one without "//" ("user:pass@host:6379"): its user part is not
		// in u.User, so Redacted would show it.
		return redactText(rawURL)
	}
	u.RawQuery = redactQuery(u.RawQuery)
	return u.Redacted()
}

// redactText masks the user part of a URL that url.Parse does not split: from after "://" (or
// the start) up to the last "@", and the passwords in its query.
func redactText(rawURL string) string {
	start := 0
	if i := strings.Index(rawURL, "://"); i >= 0 {
		start = i + len("://")
	}
	head, rest := rawURL[:start], rawURL[start:]
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		head, rest = head+mask, rest[at:]
	}
	if q := strings.IndexByte(rest, '?'); q >= 0 {
		rest = rest[:q+1] + redactQuery(rest[q+1:])
	}
	return head + rest
}

// redactQuery masks the values of rawQuery that are passwords or hold one, keeping the order
// and the spelling of everything else.
func redactQuery(rawQuery string) string {
	if rawQuery == "" {
		return ""
	}
	parts := strings.Split(rawQuery, "&")
	for i, part := range parts {
		key, value, ok := strings.Cut(part, "=")
		if ok && value != "" && secretParam(key, value) {
			parts[i] = key + "=" + mask
		}
	}
	return strings.Join(parts, "&")
}

// secretParam reports whether the query parameter key=value (both as written) is a password or
// holds one.
func secretParam(key, value string) bool {
	if k, err := url.QueryUnescape(key); err == nil {
		key = k
	}
	if strings.Contains(strings.ToLower(key), "password") {
		return true
	}
	return strings.Contains(value, "@") || strings.Contains(strings.ToLower(value), "%40")
}

// secrets returns the passwords u carries, as written and decoded, for scrub: the password of
// its user, and the query values that redactQuery masks.
func secrets(u *url.URL) []string {
	var s []string
	if p, ok := u.User.Password(); ok {
		s = append(s, p)
		if _, written, ok := strings.Cut(u.User.String(), ":"); ok {
			s = append(s, written)
		}
	}
	for _, part := range strings.Split(u.RawQuery, "&") {
		key, value, ok := strings.Cut(part, "=")
		if !ok || value == "" || !secretParam(key, value) {
			continue
		}
		s = append(s, value)
		if v, err := url.QueryUnescape(value); err == nil {
			s = append(s, v)
		}
	}
	return s
}

// scrub returns msg with every non-empty secret in it masked, the longest first (so no piece of
// a longer secret that contains a shorter one is left).
func scrub(msg string, secrets []string) string {
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	for _, s := range secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, mask)
		}
	}
	return msg
}

// parseProblem says why url.Parse rejects rawURL without quoting any of it: url.Parse's error
// text quotes the whole URL, password included, and even its reason can quote a piece of a
// password (`invalid port ":hun" after host` for redis://user:hun/ter2@host). So the reason
// is taken from parsing the redacted URL, which holds no password; when that parses, the
// problem was in the part that was masked.
func parseProblem(rawURL string) string {
	_, err := url.Parse(redactText(rawURL))
	if err == nil {
		return "the user or password does not parse (percent-encode @ : / ? # % in them)"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return "it does not parse"
}

// reason is the text of a go-redis URL error with the passwords of u scrubbed out; a URL
// parser error contributes only its reason, never the URL it quotes.
func reason(err error, u *url.URL) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return scrub(ue.Err.Error(), secrets(u))
	}
	return scrub(err.Error(), secrets(u))
}
