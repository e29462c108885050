package operator

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/internal/lockwire"
	"github.com/locktui/locktui/provider"
)

// Record is the holder record of a lock taken by one of this project's clients: who holds it,
// since when and under which fencing token. Locks taken by stock Medusa have none.
type Record struct {
	provider.Holder
	// Claim is the acquisition call that last took or re-entered the lock.
	Claim string
	// AcquiredAt is when the hold began, in the Redis server's time (a re-entry keeps it).
	AcquiredAt time.Time
	// FencingToken is the hold's token (see docs/fencing.md).
	FencingToken int64
	// Lease is the TTL of the lease that holds the lock, renewed and told of a force-release;
	// zero for a plain acquisition.
	Lease time.Duration
	// RevokedAt is when an operator's force-release told the holder to end its lease (Redis
	// server time); zero when it was not revoked.
	RevokedAt time.Time
}

// NoHolderRecord is what this project's tools say of a lock that has no holder record: stock
// Medusa writes none, nor did this project's clients before they kept one. The console, the
// CLI's get and the audit trail of a force-release use it.
const NoHolderRecord = "no holder record (stock Medusa or an older client)"

// String names the holder in a line: "medusa-worker (pid 4242 on web-1, bridge client), held
// since 2026-12-02T03:04:05.123Z, fencing token 1796180000000001".
func (r *Record) String() string {
	return fmt.Sprintf("%s, held since %s, fencing token %d", r.Holder, r.AcquiredAt.UTC().Format(time.RFC3339Nano), r.FencingToken)
}

// parseRecord reads a holder record's fields (lockwire.RecordFields), for a lock held by owner:
// nil when there is none, or when it is another owner's (a stale record left by a stock
// release).
func parseRecord(fields map[string]string, owner string) *Record {
	if len(fields) == 0 || fields["owner"] != owner {
		return nil
	}
	r := &Record{Claim: fields["claim"]}
	r.Host, r.Program, r.Client = fields["host"], fields["prog"], fields["kind"]
	r.PID, _ = strconv.Atoi(fields["pid"])
	if ms, err := strconv.ParseInt(fields["since"], 10, 64); err == nil {
		r.AcquiredAt = time.UnixMilli(ms)
	}
	r.FencingToken, _ = strconv.ParseInt(fields["fence"], 10, 64)
	if s, err := strconv.ParseInt(fields["lease"], 10, 64); err == nil {
		r.Lease = time.Duration(s) * time.Second
	}
	if ms, err := strconv.ParseInt(fields["revoked"], 10, 64); err == nil {
		r.RevokedAt = time.UnixMilli(ms)
	}
	return r
}

// HolderRecord is the holder record the provider keeps beside a lock it took, as stored
// (docs/data-model.md): who took the lock, with which acquisition call, and the expiry that call
// left. Locks taken by stock Medusa have none.
type HolderRecord struct {
	// Key is the record's Redis key ("locktui:{<lock's redis key>}:hold").
	Key string
	// Owner is the owner the writing call took the lock for.
	Owner string
	// Claim is the id of the acquisition call that wrote the record (provider.AcquireOptions.Claim).
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
func (in *Inspector) HolderRecord(ctx context.Context, key string) (rec HolderRecord, ok bool, err error) {
	rk := in.redisKey(key)
	rec.Key = lockwire.RecordKey(rk)
	pipe := in.client.Pipeline()
	text := pipe.Get(ctx, rec.Key)
	owner := pipe.Get(ctx, rk)
	lockTTL := pipe.PTTL(ctx, rk)
	recTTL := pipe.PTTL(ctx, rec.Key)
	lockTTLAfter := pipe.PTTL(ctx, rk)
	_, _ = pipe.Exec(ctx)
	stored, err := text.Result()
	switch {
	case errors.Is(err, redis.Nil), err != nil && redis.HasErrorPrefix(err, "WRONGTYPE"):
		return HolderRecord{}, false, nil // none, or not one (an older version's hash)
	case err != nil:
		return HolderRecord{}, false, fmt.Errorf("read the holder record of %q: %w", key, err)
	}
	if rec.Fields = lockwire.RecordFields(stored); rec.Fields == nil {
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
	afterMs, err := lockTTLAfter.Result()
	if err != nil {
		return HolderRecord{}, false, fmt.Errorf("read the TTL of %q: %w", key, err)
	}
	rec.Current = current == rec.Owner && recordFollows(pttlMs(lockMs), pttlMs(recMs), pttlMs(afterMs))
	return rec, true, nil
}
