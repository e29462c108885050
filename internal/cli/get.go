package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locktui/locktui/operator"
)

// getJSON is the object get --json prints.
type getJSON struct {
	// Key is the lock key without the namespace.
	Key string `json:"key"`
	// RedisKey is the full Redis key.
	RedisKey string `json:"redis_key"`
	// Exists is false when there is no such key.
	Exists bool `json:"exists"`
	// Type is the Redis type of the key: "string" for a lock, "none" when it does not exist.
	Type string `json:"type"`
	// Lock is true for a lock (a string), false for a key of another type or none.
	Lock bool `json:"lock"`
	// Owner is the lock's owner; "" when it is not a lock.
	Owner string `json:"owner"`
	// TTLms is the time to live in milliseconds, -1 for a key that never expires; null when the
	// key does not exist.
	TTLms *int64 `json:"ttl_ms"`
	// Record is the holder record, null when there is none.
	Record *recordJSON `json:"record"`
}

// recordJSON is a holder record in get --json.
type recordJSON struct {
	Key   string `json:"key"`
	Owner string `json:"owner"`
	Claim string `json:"claim"`
	// ExpireAtMs is the expiry the record notes, Unix milliseconds in Redis time; -1 for none.
	ExpireAtMs int64 `json:"expire_at_ms"`
	Reentered  bool  `json:"reentered"`
	// Current is false when the lock changed since the record was written (see
	// operator.HolderRecord).
	Current bool              `json:"current"`
	Fields  map[string]string `json:"fields"`
}

// lockInfo is what get found about one key.
type lockInfo struct {
	key, redisKey string
	exists        bool
	typ           string
	lock          operator.Lock
	record        *operator.HolderRecord
}

func runGet(ctx context.Context, s *session, o *options, p parsedArgs) int {
	args := p.all()
	if len(args) != 1 {
		return s.fail(usagef("get", "get needs exactly one KEY, got %d arguments", len(args)))
	}
	if err := checkKeys("get", args); err != nil {
		return s.fail(err)
	}
	c, err := s.connect(ctx, o)
	if err != nil {
		return s.fail(err)
	}
	defer c.Close()
	info, err := readLockInfo(ctx, c, args[0])
	if err != nil {
		return s.fail(err)
	}
	if o.json {
		err = json.NewEncoder(s.stdout).Encode(info.json())
	} else {
		err = info.writeText(s.stdout)
	}
	if err != nil {
		return s.fail(fmt.Errorf("write the lock: %w", err))
	}
	if !info.exists {
		s.errorf("%q is not locked (no key %s)", info.key, display(info.redisKey))
		return ExitConflict
	}
	return ExitOK
}

// readLockInfo reads key: the lock, the key's type when it is not a lock, and the holder record.
func readLockInfo(ctx context.Context, c *conn, key string) (lockInfo, error) {
	info := lockInfo{key: key, redisKey: c.p.RedisKey(key), typ: "none"}
	l, ok, err := c.ops.Get(ctx, key)
	if err != nil {
		return info, err
	}
	info.exists, info.lock = ok, l
	switch {
	case ok && l.Foreign:
		if info.typ, err = c.client.Type(ctx, info.redisKey).Result(); err != nil {
			return info, fmt.Errorf("read the type of %q: %w", key, err)
		}
	case ok:
		info.typ = "string"
	}
	rec, found, err := c.ops.HolderRecord(ctx, key)
	if err != nil {
		return info, err
	}
	if found {
		info.record = &rec
	}
	return info, nil
}

func (info lockInfo) json() getJSON {
	out := getJSON{Key: info.key, RedisKey: info.redisKey, Exists: info.exists, Type: info.typ,
		Lock: info.exists && !info.lock.Foreign, Owner: info.lock.Owner}
	if info.exists {
		ttl := ttlMillis(info.lock.TTL)
		out.TTLms = &ttl
	}
	if r := info.record; r != nil {
		at := int64(-1)
		if !r.ExpireAt.IsZero() {
			at = r.ExpireAt.UnixMilli()
		}
		out.Record = &recordJSON{Key: r.Key, Owner: r.Owner, Claim: r.Claim, ExpireAtMs: at,
			Reentered: r.Reentered, Current: r.Current, Fields: r.Fields}
	}
	return out
}

// writeText prints info as aligned "label: value" lines.
func (info lockInfo) writeText(w io.Writer) error {
	var b strings.Builder
	line := func(label, value string) { fmt.Fprintf(&b, "%-12s%s\n", label+":", value) }
	line("key", display(info.key))
	line("redis key", display(info.redisKey))
	switch {
	case !info.exists:
		line("type", "none (the key does not exist)")
	case info.lock.Foreign:
		line("type", info.typ+" (not a lock)")
		line("ttl", formatTTL(info.lock.TTL))
	default:
		line("type", "string (a lock)")
		line("owner", display(info.lock.Owner))
		line("ttl", formatTTL(info.lock.TTL))
	}
	r := info.record
	if r == nil {
		if info.exists && !info.lock.Foreign {
			line("record", "none: "+operator.NoHolderRecord)
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
	line("record", display(r.Key))
	line("  owner", display(r.Owner))
	line("  claim", display(r.Claim))
	expires := "never"
	if !r.ExpireAt.IsZero() {
		expires = r.ExpireAt.UTC().Format(time.RFC3339Nano) + " (Redis time)"
	}
	line("  expires", expires)
	line("  re-entry", yesNo(r.Reentered))
	current := "yes"
	if !r.Current {
		current = "no: the lock changed since the record was written (by a client that writes none, such as stock Medusa), or is gone"
	}
	line("  current", current)
	shown := []string{"owner", "claim", "at", "re"}
	if h := r.Hold; h != nil {
		shown = append(shown, "host", "pid", "prog", "kind", "since", "fence")
		line("  holder", h.Holder.String())
		line("  acquired", h.AcquiredAt.UTC().Format(time.RFC3339Nano)+" (Redis time)")
		line("  fencing", strconv.FormatInt(h.FencingToken, 10))
	}
	for _, k := range slices.Sorted(maps.Keys(r.Fields)) {
		if !slices.Contains(shown, k) {
			line("  "+display(k), display(r.Fields[k]))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
