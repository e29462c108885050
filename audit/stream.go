package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultStream is the Redis stream the console audits to: outside any lock namespace, so it
// never shows up as a lock.
const DefaultStream = "locktui:audit"

// DefaultStreamMaxLen is the approximate number of entries a Stream keeps.
const DefaultStreamMaxLen = 10000

// Stream adds each record to a Redis stream (XADD), trimmed to about maxLen entries, so every
// console on the same Redis shares one trail, readable with XRANGE or XREVRANGE. Each entry's
// fields are the Record's JSON names, with time in RFC 3339 (nanoseconds, UTC) and locks, when
// there are any, as one JSON array.
type Stream struct {
	client redis.UniversalClient
	name   string
	maxLen int64
}

// NewStream returns a Stream writing to the stream name (DefaultStream if empty), trimmed with
// MAXLEN ~ maxLen: 0 means DefaultStreamMaxLen, a negative maxLen keeps every entry. The caller
// keeps ownership of client.
func NewStream(client redis.UniversalClient, name string, maxLen int64) *Stream {
	if name == "" {
		name = DefaultStream
	}
	if maxLen == 0 {
		maxLen = DefaultStreamMaxLen
	}
	return &Stream{client: client, name: name, maxLen: max(maxLen, 0)}
}

// Name returns the stream's key.
func (s *Stream) Name() string { return s.name }

// Write adds r to the stream.
func (s *Stream) Write(ctx context.Context, r Record) error {
	r = complete(r)
	args := &redis.XAddArgs{
		Stream: s.name,
		MaxLen: s.maxLen,
		Approx: s.maxLen > 0,
		Values: []any{
			"time", r.Time.Format(time.RFC3339Nano),
			"operator", r.Operator,
			"action", r.Action,
			"key", r.Key,
			"owner", r.Owner,
			"result", r.Result,
			"count", strconv.Itoa(r.Count),
			"namespace", r.Namespace,
			"server", r.Server,
			"holder", r.Holder,
		},
	}
	if r.Part > 0 {
		args.Values = append(args.Values.([]any), "part", strconv.Itoa(r.Part))
	}
	if r.Mode != "" {
		args.Values = append(args.Values.([]any), "mode", r.Mode)
	}
	if !r.ToldAt.IsZero() {
		args.Values = append(args.Values.([]any), "told_at", r.ToldAt.Format(time.RFC3339Nano))
	}
	if len(r.Locks) > 0 {
		locks, err := json.Marshal(r.Locks)
		if err != nil {
			return fmt.Errorf("audit: encode the locks released: %w", err)
		}
		args.Values = append(args.Values.([]any), "locks", string(locks))
	}
	if err := s.client.XAdd(ctx, args).Err(); err != nil {
		return fmt.Errorf("audit: add to stream %q: %w", s.name, err)
	}
	return nil
}

// FromStream decodes the fields of one stream entry written by Write.
func FromStream(values map[string]any) (Record, error) {
	str := func(k string) string { s, _ := values[k].(string); return s }
	t, err := time.Parse(time.RFC3339Nano, str("time"))
	if err != nil {
		return Record{}, fmt.Errorf("audit: stream entry time %q: %w", str("time"), err)
	}
	count, err := strconv.Atoi(str("count"))
	if err != nil {
		return Record{}, fmt.Errorf("audit: stream entry count %q: %w", str("count"), err)
	}
	part := 0
	if s := str("part"); s != "" {
		if part, err = strconv.Atoi(s); err != nil {
			return Record{}, fmt.Errorf("audit: stream entry part %q: %w", s, err)
		}
	}
	var told time.Time
	if s := str("told_at"); s != "" {
		if told, err = time.Parse(time.RFC3339Nano, s); err != nil {
			return Record{}, fmt.Errorf("audit: stream entry told_at %q: %w", s, err)
		}
	}
	var locks []LockReleased
	if s := str("locks"); s != "" {
		if err := json.Unmarshal([]byte(s), &locks); err != nil {
			return Record{}, fmt.Errorf("audit: stream entry locks: %w", err)
		}
	}
	return Record{Time: t, Operator: str("operator"), Action: str("action"), Key: str("key"),
		Owner: str("owner"), Result: str("result"), Count: count, Namespace: str("namespace"),
		Server: str("server"), Holder: str("holder"), Locks: locks, Part: part, Mode: str("mode"), ToldAt: told}, nil
}
