package provider

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// recordFields are the fields of a holder record in the order they are stored, joined by NUL
// bytes with the owner after the last (lib.lua says what each means). Defined here once; the
// scripts get them in front of lib.lua (recordConstants).
var recordFields = []string{"claim", "at", "since", "fence", "host", "pid", "prog", "kind", "re", "prev", "lease", "revoked"}

// recordConstants defines recordFields for the scripts, as RECORD_FIELDS.
var recordConstants = "local RECORD_FIELDS = {'" + strings.Join(recordFields, "', '") + "'}\n"

// recordFieldsOf splits the text of a holder record into its fields, the empty ones left out and
// the owner as "owner"; nil when text is not a record.
func recordFieldsOf(text string) map[string]string {
	parts := strings.SplitN(text, "\x00", len(recordFields)+1)
	if len(parts) != len(recordFields)+1 {
		return nil
	}
	fields := make(map[string]string, len(parts))
	for i, name := range recordFields {
		if parts[i] != "" {
			fields[name] = parts[i]
		}
	}
	fields["owner"] = parts[len(recordFields)]
	return fields
}

// HolderRecord is the holder record the provider keeps beside a lock it took (see the package
// documentation): who took the lock, with which acquisition call, and the expiry that call left.
// Locks taken by stock Medusa have none.
type HolderRecord struct {
	// Key is the record's Redis key ("locktui:{<lock's redis key>}:hold").
	Key string
	// Owner is the owner the writing call took the lock for.
	Owner string
	// Claim is the id of the acquisition call that wrote the record (AcquireOptions.Claim).
	Claim string
	// ExpireAt is the lock's expiry that call (or a renewal under its claim) left, in Redis
	// server time; zero when it left the lock without expiry. A renewal under another claim of
	// the same owner (an earlier lease, after a re-entry) moves the lock's expiry, not this.
	ExpireAt time.Time
	// Reentered is true when the call re-entered a lock its owner already held.
	Reentered bool
	// Current reports whether the record still describes the lock: the lock exists with the
	// record's owner, and the record key's own expiry is the lock's (as for Lock.Record; our
	// scripts give the record the lock's expiry whenever they set it, ExpireAt or not). It is
	// false when the lock changed since the record was written by a client that writes none
	// (stock Medusa, or a plain SET or EXPIRE), or is gone.
	Current bool
	// Fields are every field of the record as stored, the ones above included.
	Fields map[string]string
	// Hold is who holds the lock, since when and under which fencing token, read from Fields
	// (as Lock.Record); nil for a record written before this project kept them.
	Hold *Record
}

// HolderRecord reads the holder record of key (without namespace) and checks it against the
// lock, in one round trip; ok is false when there is none. It only reads.
func (p *Provider) HolderRecord(ctx context.Context, key string) (rec HolderRecord, ok bool, err error) {
	rk := p.RedisKey(key)
	rec.Key = recordKey(rk)
	pipe := p.client.Pipeline()
	text := pipe.Get(ctx, rec.Key)
	owner := pipe.Get(ctx, rk)
	lockTTL := pipe.PTTL(ctx, rk)
	recTTL := pipe.PTTL(ctx, rec.Key)
	_, _ = pipe.Exec(ctx)
	stored, err := text.Result()
	switch {
	case errors.Is(err, redis.Nil), err != nil && redis.HasErrorPrefix(err, "WRONGTYPE"):
		return HolderRecord{}, false, nil // none, or not one (an older version's hash)
	case err != nil:
		return HolderRecord{}, false, fmt.Errorf("read the holder record of %q: %w", key, err)
	}
	if rec.Fields = recordFieldsOf(stored); rec.Fields == nil {
		return HolderRecord{}, false, nil
	}
	rec.Owner, rec.Claim, rec.Reentered = rec.Fields["owner"], rec.Fields["claim"], rec.Fields["re"] == "1"
	if _, ok := rec.Fields["fence"]; ok {
		rec.Hold = parseRecord(rec.Fields, rec.Owner)
	}
	recAt, err := strconv.ParseInt(rec.Fields["at"], 10, 64)
	if err == nil && recAt >= 0 {
		rec.ExpireAt = time.UnixMilli(recAt)
	}
	current, err := owner.Result()
	switch {
	case errors.Is(err, redis.Nil), err != nil && redis.HasErrorPrefix(err, "WRONGTYPE"):
		return rec, true, nil // no lock, or not a lock: the record is stale
	case err != nil:
		return HolderRecord{}, false, fmt.Errorf("read %q: %w", key, err)
	}
	lockMs, err := lockTTL.Result()
	if err != nil {
		return HolderRecord{}, false, fmt.Errorf("read the TTL of %q: %w", key, err)
	}
	recMs, err := recTTL.Result()
	if err != nil {
		return HolderRecord{}, false, fmt.Errorf("read the TTL of the holder record of %q: %w", key, err)
	}
	rec.Current = current == rec.Owner && recordFollows(pttlMs(lockMs), pttlMs(recMs))
	return rec, true, nil
}
