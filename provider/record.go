package provider

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// HolderRecord is the holder record the provider keeps beside a lock it took (see the package
// documentation): who took the lock, with which acquisition call, and the expiry that call left.
// Locks taken by stock Medusa have none.
type HolderRecord struct {
	// Key is the record's Redis key ("locktui:{<lock's redis key>}:holder").
	Key string
	// Owner is the owner the writing call took the lock for.
	Owner string
	// Claim is the id of the acquisition call that wrote the record (AcquireOptions.Claim).
	Claim string
	// ExpireAt is the lock's expiry that call (or a renewal under its claim) left, in Redis
	// server time; zero when it left the lock without expiry.
	ExpireAt time.Time
	// Reentered is true when the call re-entered a lock its owner already held.
	Reentered bool
	// Current reports whether the record still describes the lock: the lock exists with the
	// record's owner and, on servers that report absolute expiries (Redis 7 and later), with the
	// expiry the record notes. It is false when the lock changed since the record was written by
	// a client that writes none (stock Medusa, or a plain SET), or is gone.
	Current bool
	// Fields are every field of the record as stored, the ones above included.
	Fields map[string]string
	// Hold is who holds the lock, since when and under which fencing token, read from Fields
	// (as Lock.Record); nil for a record written before this project kept them.
	Hold *Record
}

// expiryTolerance is how far, in milliseconds, a record's expiry may be from the lock's and still
// be the same one (servers before Redis 7 compute it from PTTL and TIME; see lib.lua).
const expiryTolerance = 2

// HolderRecord reads the holder record of key (without namespace) and checks it against the
// lock, in one round trip; ok is false when there is none. It only reads.
func (p *Provider) HolderRecord(ctx context.Context, key string) (rec HolderRecord, ok bool, err error) {
	rk := p.RedisKey(key)
	rec.Key = recordKey(rk)
	pipe := p.client.Pipeline()
	fields := pipe.HGetAll(ctx, rec.Key)
	owner := pipe.Get(ctx, rk)
	at := pipe.PExpireTime(ctx, rk)
	_, _ = pipe.Exec(ctx)
	rec.Fields, err = fields.Result()
	if err != nil {
		return HolderRecord{}, false, fmt.Errorf("read the holder record of %q: %w", key, err)
	}
	if len(rec.Fields) == 0 {
		return HolderRecord{}, false, nil
	}
	rec.Owner, rec.Claim, rec.Reentered = rec.Fields["owner"], rec.Fields["claim"], rec.Fields["re"] == "1"
	if _, ok := rec.Fields["fence"]; ok {
		rec.Hold = parseRecord(rec.Fields, rec.Owner)
	}
	recAt, atErr := strconv.ParseInt(rec.Fields["at"], 10, 64)
	if atErr == nil && recAt >= 0 {
		rec.ExpireAt = time.UnixMilli(recAt)
	}
	current, err := owner.Result()
	switch {
	case errors.Is(err, redis.Nil), err != nil && redis.HasErrorPrefix(err, "WRONGTYPE"):
		return rec, true, nil // no lock, or not a lock: the record is stale
	case err != nil:
		return HolderRecord{}, false, fmt.Errorf("read %q: %w", key, err)
	}
	rec.Current = current == rec.Owner
	if lockAt, err := at.Result(); err == nil && atErr == nil {
		// PEXPIRETIME returns -1 (no expiry) unscaled, like the record's "at".
		ms := int64(lockAt)
		if lockAt > 0 {
			ms = lockAt.Milliseconds()
		}
		rec.Current = rec.Current && max(ms-recAt, recAt-ms) <= expiryTolerance
	} else if err != nil && !IsReplyError(err) {
		return HolderRecord{}, false, fmt.Errorf("read the expiry of %q: %w", key, err)
	}
	return rec, true, nil
}
