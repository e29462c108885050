package bridge

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// Decoder limits that do not depend on the configuration.
const (
	// MaxIDBytes bounds the JSON text of a request id (and of a cancel target).
	MaxIDBytes = 128
	// MaxSeconds bounds every duration field (expire, timeout): about 31 years. The welcome
	// announces it (limits.max_seconds).
	MaxSeconds = 1e9
	// quoteLimit bounds how much of a client's text an error message quotes back.
	quoteLimit = 64
	// MaxClaimBytes bounds a claim.
	MaxClaimBytes = 64
	// MaxResumeIDs bounds the ids of one resume (a client has at most max_in_flight requests in
	// flight; the hard bound keeps a hostile frame small whatever the limits).
	MaxResumeIDs = 4096
)

// EmptyOwnerAllowed reports whether an owner may be the empty string; the welcome announces it
// (empty_owner_allowed). It may not: stock Medusa would store "" as a named owner, which the Go
// provider cannot represent, so "" is a bad_request (null is the anonymous owner "*").
const EmptyOwnerAllowed = false

// fieldSpec lists the fields an op takes besides id and op, and which of them are required.
type fieldSpec struct {
	allowed  []string
	required []string
}

var opFields = map[Op]fieldSpec{
	OpAcquire:      {allowed: []string{"keys", "owner", "expire", "await_queue", "timeout", "claim"}, required: []string{"keys"}},
	OpRelease:      {allowed: []string{"keys", "owner"}, required: []string{"keys"}},
	OpReleaseAll:   {allowed: []string{"owner"}},
	OpLease:        {allowed: []string{"keys", "timeout", "expire"}, required: []string{"keys"}},
	OpLeaseRelease: {allowed: []string{"lease"}, required: []string{"lease"}},
	OpCancel:       {allowed: []string{"target"}, required: []string{"target"}},
	OpPing:         {},
	OpResume:       {allowed: []string{"session", "ids"}, required: []string{"session", "ids"}},
	OpSettle:       {allowed: []string{"keys", "owner", "claim"}, required: []string{"keys", "claim"}},
}

// splitBatch reports whether a text frame is a batch (a JSON array) and returns its elements,
// each to be decoded as one request, in order. A batch that is not valid JSON or is empty is a
// bad_request; a frame that is not an array is not a batch.
func splitBatch(frame []byte) (requests []json.RawMessage, batch bool, err *Error) {
	trimmed := bytes.TrimLeft(frame, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return nil, false, nil
	}
	if err := json.Unmarshal(trimmed, &requests); err != nil {
		return nil, true, newError(CodeBadRequest, "invalid JSON: "+err.Error())
	}
	if len(requests) == 0 {
		return nil, true, newError(CodeBadRequest, "an empty batch: a batch is an array of one request or more")
	}
	return requests, true, nil
}

// DecodeRequest parses one request (a text frame, or an element of a batch) strictly: a JSON object with an id (string or number),
// a known op and exactly the fields that op takes, each of the right type and range. On failure
// it returns an *Error (code bad_request or unknown_op) and, when the id could be read, a
// Request carrying it, so that the reply can name the request. It never panics.
func DecodeRequest(frame []byte) (Request, error) {
	var req Request
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(frame, &fields); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return req, newError(CodeBadRequest, "a request must be a JSON object")
		}
		return req, newError(CodeBadRequest, "invalid JSON: "+err.Error())
	}
	if fields == nil {
		return req, newError(CodeBadRequest, "a request must be a JSON object")
	}
	id, err := decodeID("id", fields["id"])
	if err != nil {
		return req, err
	}
	req.ID = id
	rawOp, ok := fields["op"]
	if !ok || isNull(rawOp) {
		return req, newError(CodeBadRequest, `"op" is required`)
	}
	var op string
	if err := unmarshalString(rawOp, &op); err != nil {
		return req, newError(CodeBadRequest, `"op" must be a string`)
	}
	spec, known := opFields[Op(op)]
	if !known {
		return req, newError(CodeUnknownOp, "unknown op "+quote(op))
	}
	req.Op = Op(op)
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if name != "id" && name != "op" && !slices.Contains(spec.allowed, name) {
			return req, newError(CodeBadRequest, fmt.Sprintf("unknown field %s for op %q", quote(name), op))
		}
	}
	for _, name := range spec.required {
		if raw, ok := fields[name]; !ok || isNull(raw) {
			return req, newError(CodeBadRequest, fmt.Sprintf("%q is required for op %q", name, op))
		}
	}
	if err := req.decodeFields(fields); err != nil {
		return req, err
	}
	return req, nil
}

// decodeFields fills the op's fields; absent and null optional fields keep their zero value.
func (req *Request) decodeFields(fields map[string]json.RawMessage) *Error {
	present := func(name string) (json.RawMessage, bool) {
		raw, ok := fields[name]
		return raw, ok && !isNull(raw)
	}
	var err *Error
	if raw, ok := present("keys"); ok {
		if req.Keys, err = decodeKeys(raw); err != nil {
			return err
		}
	}
	if raw, ok := present("owner"); ok {
		if err := unmarshalString(raw, &req.Owner); err != nil {
			return newError(CodeBadRequest, `"owner" must be a string or null`)
		}
		if req.Owner == "" && !EmptyOwnerAllowed {
			return newError(CodeBadRequest, `"owner" must not be empty: send null for the anonymous owner "*"`)
		}
	}
	if raw, ok := present("await_queue"); ok {
		if err := json.Unmarshal(raw, &req.AwaitQueue); err != nil {
			return newError(CodeBadRequest, `"await_queue" must be a boolean`)
		}
	}
	if raw, ok := present("expire"); ok {
		secs, err := decodeSeconds("expire", raw, req.Op == OpLease)
		if err != nil {
			return err
		}
		// TTLs are whole seconds; round up so that a lock is never shorter than asked.
		req.Expire = time.Duration(math.Ceil(secs)) * time.Second
	}
	if raw, ok := present("timeout"); ok {
		secs, err := decodeSeconds("timeout", raw, true)
		if err != nil {
			return err
		}
		if req.Op == OpAcquire && !req.AwaitQueue {
			return newError(CodeBadRequest, `"timeout" is only allowed with "await_queue": true`)
		}
		// Round up to the nanosecond, so that a tiny positive timeout never becomes "none".
		req.Timeout = time.Duration(math.Ceil(secs * float64(time.Second)))
	}
	if raw, ok := present("lease"); ok {
		if err := unmarshalString(raw, &req.Lease); err != nil || req.Lease == "" {
			return newError(CodeBadRequest, `"lease" must be a non-empty string`)
		}
	}
	if raw, ok := present("target"); ok {
		if req.Target, err = decodeID("target", raw); err != nil {
			return err
		}
	}
	if raw, ok := present("claim"); ok {
		if unmarshalString(raw, &req.Claim) != nil || !validClaim(req.Claim) {
			return newError(CodeBadRequest, fmt.Sprintf(`"claim" must be 1 to %d characters out of A-Z a-z 0-9 . _ -`, MaxClaimBytes))
		}
	}
	if raw, ok := present("session"); ok {
		if unmarshalString(raw, &req.Session) != nil || !validSession(req.Session) {
			return newError(CodeBadRequest, `"session" must be a session id from a welcome message (32 hex digits)`)
		}
	}
	if raw, ok := present("ids"); ok {
		var items []json.RawMessage
		if raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
			return newError(CodeBadRequest, `"ids" must be an array of request ids`)
		}
		if len(items) > MaxResumeIDs {
			return newError(CodeBadRequest, fmt.Sprintf(`"ids" may name at most %d requests`, MaxResumeIDs))
		}
		for _, item := range items {
			id, err := decodeID("ids", item)
			if err != nil {
				return err
			}
			req.IDs = append(req.IDs, id)
		}
	}
	return nil
}

// validClaim reports whether s can be a claim: 1 to MaxClaimBytes of A-Z a-z 0-9 . _ -.
func validClaim(s string) bool {
	if s == "" || len(s) > MaxClaimBytes {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
		default:
			return false
		}
	}
	return true
}

// validSession reports whether s looks like a session id: sessionIDBytes*2 hex digits.
func validSession(s string) bool {
	if len(s) != 2*sessionIDBytes {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// decodeID validates an id or cancel target: a JSON string or number. A string is re-encoded
// (invalid UTF-8 becomes U+FFFD), so that echoing it back always makes a valid text frame; a
// number is kept as sent. The result is at most MaxIDBytes long.
func decodeID(name string, raw json.RawMessage) (json.RawMessage, *Error) {
	if raw == nil {
		return nil, newError(CodeBadRequest, fmt.Sprintf("%q is required: a string or a number", name))
	}
	tooLong := newError(CodeBadRequest, fmt.Sprintf("%q is longer than %d bytes", name, MaxIDBytes))
	if len(raw) > MaxIDBytes {
		return nil, tooLong
	}
	switch c := raw[0]; {
	case c == '"':
		if _, ok := plainString(raw); ok && !bytes.Contains(raw, lineSep) && !bytes.Contains(raw, paraSep) {
			return raw, nil // already canonical: what the encoder below would write
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, newError(CodeBadRequest, fmt.Sprintf("%q must be a string or a number", name))
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(s) // a string always encodes
		canonical := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
		if len(canonical) > MaxIDBytes {
			return nil, tooLong
		}
		return canonical, nil
	case c == '-', c >= '0' && c <= '9':
		return raw, nil
	default:
		return nil, newError(CodeBadRequest, fmt.Sprintf("%q must be a string or a number", name))
	}
}

// decodeKeys reads a non-empty array of strings.
func decodeKeys(raw json.RawMessage) ([]string, *Error) {
	notStrings := newError(CodeBadRequest, `"keys" must be an array of strings`)
	var items []json.RawMessage
	if raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
		return nil, notStrings
	}
	if len(items) == 0 {
		return nil, newError(CodeBadRequest, `"keys" must hold at least one key`)
	}
	keys := make([]string, len(items))
	for i, item := range items {
		// Checked by hand: encoding/json would turn a null item into "".
		if item[0] != '"' || unmarshalString(item, &keys[i]) != nil {
			return nil, notStrings
		}
	}
	return keys, nil
}

// decodeSeconds reads a number of seconds in [0, MaxSeconds], or in (0, MaxSeconds] when
// positive is set.
func decodeSeconds(name string, raw json.RawMessage, positive bool) (float64, *Error) {
	if c := raw[0]; c != '-' && (c < '0' || c > '9') {
		return 0, newError(CodeBadRequest, fmt.Sprintf("%q must be a number of seconds", name))
	}
	v, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || v < 0 || v > MaxSeconds || math.IsNaN(v) {
		return 0, newError(CodeBadRequest, fmt.Sprintf("%q must be between 0 and %d seconds", name, int64(MaxSeconds)))
	}
	if positive && v == 0 {
		return 0, newError(CodeBadRequest, fmt.Sprintf("%q must be more than 0 seconds", name))
	}
	return v, nil
}

// U+2028 and U+2029, which encoding/json escapes even without HTML escaping.
var lineSep, paraSep = []byte("\u2028"), []byte("\u2029")

// plainString returns the string that raw, a JSON value, encodes when it is a string without
// escapes or control characters in valid UTF-8: its bytes between the quotes, as
// encoding/json would decode it. Otherwise ok is false.
func plainString(raw []byte) (s string, ok bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	body := raw[1 : len(raw)-1]
	for _, c := range body {
		if c == '\\' || c == '"' || c < 0x20 {
			return "", false
		}
	}
	if !utf8.Valid(body) {
		return "", false
	}
	return string(body), true
}

// unmarshalString decodes a JSON string into dst as json.Unmarshal does, without its
// reflection for plain strings (most of a frame's).
func unmarshalString(raw []byte, dst *string) error {
	if s, ok := plainString(raw); ok {
		*dst = s
		return nil
	}
	return json.Unmarshal(raw, dst)
}

// idKey is the identity of an id within a connection: its JSON text, canonical for strings and
// as sent for numbers, so "7" and 7 are different ids, and so are 7 and 7.0.
func idKey(raw json.RawMessage) string { return string(raw) }

func isNull(raw json.RawMessage) bool { return bytes.Equal(raw, []byte("null")) }

// quote quotes s for an error message, shortened to quoteLimit bytes.
func quote(s string) string {
	if len(s) > quoteLimit {
		return strconv.Quote(s[:quoteLimit]) + "…"
	}
	return strconv.Quote(s)
}
