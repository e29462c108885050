package operator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/internal/lockwire"
	"github.com/locktui/locktui/provider"
)

// Lock is one key under the namespace, as the console and the CLI show it: read by Get, Read or a
// scan.
type Lock struct {
	// Key is the lock key without namespace.
	Key string
	// RedisKey is the full Redis key.
	RedisKey string
	// Owner is the stored owner id ("" for a foreign key).
	Owner string
	// TTL is the remaining time to live, or provider.NoExpiry.
	TTL time.Duration
	// Foreign is true for a key under the namespace that is not a lock (not a string).
	Foreign bool
	// Record is the lock's holder record: nil when the lock has none (taken by stock Medusa,
	// or by a version of this project that wrote none), or has one that does not describe the
	// current hold: of another owner, or whose own expiry is not the lock's (recordFollows),
	// such as the record an earlier hold of ours left when a stock process took the key again
	// under the same owner id. A lock and a record both without expiry are taken for the same
	// hold (docs/fencing.md).
	Record *Record
}

// ScanCount is the COUNT hint of every SCAN a walk of the namespace sends (100, also for
// provider's ReleaseAll): the size of a batch. SCAN walks the whole database (MATCH filters after
// the walk), so each SCAN examines about ScanCount keys of it, whatever the namespace holds.
const ScanCount = lockwire.ScanCount

// ScanOptions tune ScanWith. The zero value walks as fast as Redis answers.
type ScanOptions struct {
	// Pace is called before each round trip with what it is about to send: scans SCANs (each
	// examining about ScanCount keys of the database) and reads, ReadsPerKey per key. It may
	// wait (a budget: the console's) and its error ends the walk. On a Cluster it is called
	// concurrently for the masters. nil: no pacing.
	Pace func(ctx context.Context, scans, reads int) error
}

// Scan walks every lock under the namespace and calls fn with each batch (see ScanWith).
func (in *Inspector) Scan(ctx context.Context, fn func([]Lock) error) error {
	return in.ScanWith(ctx, ScanOptions{}, fn)
}

// ScanWith walks every lock under the namespace with SCAN … MATCH <namespace>* and calls fn with
// each batch, read with one pipeline per batch of ReadsPerKey reads per key (queueReads); the
// SCAN for the next batch rides in that pipeline, so a walk takes one round trip per batch plus
// one. A key of another type is reported as Foreign instead of failing the walk; a key that
// vanished between SCAN and the reads is left out. fn is never called concurrently (the masters
// of a Cluster are scanned in parallel); an error from fn or from opts.Pace ends the walk and is
// returned as is.
func (in *Inspector) ScanWith(ctx context.Context, opts ScanOptions, fn func([]Lock) error) error {
	return lockwire.Walk(ctx, in.client, in.opts.Namespace, ReadsPerKey, opts.Pace,
		func(ctx context.Context, pipe redis.Pipeliner, keys []string) func() error {
			parse := in.queueReads(ctx, pipe, keys)
			return func() error {
				found, _, err := parse()
				if err != nil || len(found) == 0 {
					return err
				}
				return fn(found)
			}
		})
}

// List returns every lock under the namespace (see Scan). Keys may repeat when the keyspace is
// rehashed during the walk; List drops the repeats.
func (in *Inspector) List(ctx context.Context) ([]Lock, error) {
	return in.ListWith(ctx, ScanOptions{})
}

// ListWith is List paced by opts (see ScanWith).
func (in *Inspector) ListWith(ctx context.Context, opts ScanOptions) ([]Lock, error) {
	var out []Lock
	seen := map[string]bool{}
	err := in.ScanWith(ctx, opts, func(batch []Lock) error {
		for _, l := range batch {
			if !seen[l.Key] {
				seen[l.Key] = true
				out = append(out, l)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list locks: %w", err)
	}
	return out, nil
}

// Get reads one lock; ok is false when the key does not exist.
func (in *Inspector) Get(ctx context.Context, key string) (lock Lock, ok bool, err error) {
	found, _, err := in.Read(ctx, []string{key})
	if err != nil || len(found) == 0 {
		return Lock{}, false, err
	}
	return found[0], true, nil
}

// Read reads keys (without namespace) with one pipeline of ReadsPerKey reads per key (the lock
// and its holder record, in the lock's slot): the locks found, and the keys that do not exist.
// A key of another type is a Foreign lock.
func (in *Inspector) Read(ctx context.Context, keys []string) (found []Lock, absent []string, err error) {
	if len(keys) == 0 {
		return nil, nil, nil
	}
	pipe := in.client.Pipeline()
	parse := in.queueReads(ctx, pipe, keys)
	_, _ = pipe.Exec(ctx)
	return parse()
}

// ReadsPerKey is the number of commands Read and ScanWith send per key read: GET and PTTL of
// the lock, PTTL of its holder record, PTTL of the lock again (the two around the record's tell
// whether the record is the current hold's: recordFollows) and GET of the record.
const ReadsPerKey = 5

// queueReads queues the ReadsPerKey reads of each key on pipe and returns the function that
// parses them after Exec: a key of another type is Foreign, a key that vanished between the
// reads is absent, and a holder record is the lock's only when it has the lock's owner and
// expiry.
func (in *Inspector) queueReads(ctx context.Context, pipe redis.Pipeliner, keys []string) func() ([]Lock, []string, error) {
	gets := make([]*redis.StringCmd, len(keys))
	ttls := make([]*redis.DurationCmd, len(keys))
	recTTLs := make([]*redis.DurationCmd, len(keys))
	ttlsAfter := make([]*redis.DurationCmd, len(keys))
	recs := make([]*redis.StringCmd, len(keys))
	for i, key := range keys {
		rk := in.redisKey(key)
		gets[i] = pipe.Get(ctx, rk)
		ttls[i] = pipe.PTTL(ctx, rk)
		recTTLs[i] = pipe.PTTL(ctx, lockwire.RecordKey(rk))
		ttlsAfter[i] = pipe.PTTL(ctx, rk)
		recs[i] = pipe.Get(ctx, lockwire.RecordKey(rk))
	}
	return func() (found []Lock, absent []string, _ error) {
		found = make([]Lock, 0, len(keys))
		for i, key := range keys {
			owner, err := gets[i].Result()
			l := Lock{Key: key, RedisKey: in.redisKey(key), Owner: owner}
			switch {
			case errors.Is(err, redis.Nil):
				absent = append(absent, key) // released between SCAN and GET
				continue
			case err != nil && redis.HasErrorPrefix(err, "WRONGTYPE"):
				l.Owner, l.Foreign = "", true
			case err != nil:
				return nil, nil, fmt.Errorf("read %q: %w", key, err)
			}
			ttl, err := ttls[i].Result()
			if err != nil {
				return nil, nil, fmt.Errorf("read the TTL of %q: %w", key, err)
			}
			lockMs := pttlMs(ttl)
			switch {
			case lockMs == -2:
				absent = append(absent, key) // expired between GET and PTTL
				continue
			case lockMs < 0:
				l.TTL = provider.NoExpiry
			default:
				l.TTL = ttl
			}
			text, err := recs[i].Result()
			recTTL, ttlErr := recTTLs[i].Result()
			after, afterErr := ttlsAfter[i].Result()
			if afterErr == nil && pttlMs(after) == -2 {
				absent = append(absent, key) // released between the reads
				continue
			}
			if err == nil && ttlErr == nil && afterErr == nil && !l.Foreign &&
				recordFollows(lockMs, pttlMs(recTTL), pttlMs(after)) {
				l.Record = parseRecord(lockwire.RecordFields(text), l.Owner)
			}
			found = append(found, l)
		}
		return found, absent, nil
	}
}

// pttlMs is a PTTL reply in milliseconds, -1 (no expiry) and -2 (no key) as Redis sends them:
// go-redis returns those unscaled (some versions scaled them to ms).
func pttlMs(d time.Duration) int64 {
	switch d {
	case -1, -time.Millisecond:
		return -1
	case -2, -2 * time.Millisecond:
		return -2
	}
	return d.Milliseconds()
}

// recordTTLTolerance is how far, in milliseconds, the expiry of a holder record may be from its
// lock's for the record to be the current hold's. Our scripts give the record the lock's very
// expiry (PXAT or PEXPIREAT to the lock's PEXPIRETIME: acquire.lua, lib.lua); PTTL rounds each to
// the millisecond, and servers before Redis 7 compute the expiry from TIME and PTTL, one more
// millisecond. Stock Medusa's SET NX EX and renewals give the lock an expiry of their own, a
// whole number of seconds from when they run: it falls within the tolerance of our record's only
// when stock took the key again within a few milliseconds of our take or renewal, with the same
// TTL.
const recordTTLTolerance = 5

// recordFollows reports whether a holder record whose key has PTTL recMs (ms; -1: no expiry,
// -2: no record) describes the current hold of a lock whose PTTL was lockMs just before the
// record's was read and afterMs just after: whether it has the lock's expiry. The lock's expiry
// as of the record's read lies between the two readings however long Redis stalled between the
// reads (a busy machine preempts it for milliseconds), so the record's must lie there too, give
// or take recordTTLTolerance. (A renewal between the reads and a stall of more than that in the
// other gap together can still hide the record: the read then shows none, and a force-release
// pinned to it does nothing, the safe side.)
//
// Every script of ours that sets a lock's expiry gives its record the same one (lib.lua), and
// stock's writes (SET NX EX, renewals, DEL) never touch the record: a record left by an earlier
// hold of ours, when a stock process took the key again under the same owner id, keeps that
// hold's expiry, and a stock renewal of our hold moves the lock's expiry away from the record's
// (until our next renewal brings it along). A lock without expiry and a record without expiry
// are taken for the same hold: they cannot be told apart.
func recordFollows(lockMs, recMs, afterMs int64) bool {
	if lockMs < 0 || recMs < 0 || afterMs < 0 {
		return lockMs == -1 && recMs == -1 && afterMs == -1
	}
	return recMs >= min(lockMs, afterMs)-recordTTLTolerance && recMs <= max(lockMs, afterMs)+recordTTLTolerance
}

// Printable shows a key or an owner id as is when it is plain, and quoted in Go syntax (control
// characters escaped) when it is empty, holds spaces, characters that do not print or bytes
// that are not UTF-8 (a raw 0x9b starts an escape sequence on 8-bit terminals), or starts with a
// quote, so the empty owner, a blank one and one carrying terminal escapes are seen for
// what they are, and what is shown quoted always stands for its unquoted text (the console's
// filter reads it back so). The console and the CLI show every key and owner through it.
func Printable(s string) string { return lockwire.Printable(s) }

// LiteralPattern escapes s so that it matches itself literally in a Redis glob pattern (SCAN
// MATCH, PSUBSCRIBE): LiteralPattern(ns)+"*" matches exactly the keys of namespace ns. Stock
// Medusa passes the namespace unescaped, so "*", "?" and "[" in it widen the match to other
// namespaces.
func LiteralPattern(s string) string { return lockwire.LiteralPattern(s) }
