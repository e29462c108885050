package provider

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/redis/go-redis/v9"
)

// NoExpiry is the TTL reported for a lock that never expires.
const NoExpiry = time.Duration(-1)

// Lock is one key under the namespace, as the console and the CLI show it.
type Lock struct {
	// Key is the lock key without namespace.
	Key string
	// RedisKey is the full Redis key.
	RedisKey string
	// Owner is the stored owner id ("" for a foreign key).
	Owner string
	// TTL is the remaining time to live, or NoExpiry.
	TTL time.Duration
	// Foreign is true for a key under the namespace that is not a lock (not a string).
	Foreign bool
}

// Scan walks every lock under the namespace with SCAN and calls fn with each batch, read with one
// pipeline of GET and PTTL per batch. A key of another type is reported as Foreign instead of
// failing the walk; a key that vanished between SCAN and the reads is left out. fn is never
// called concurrently (the masters of a Cluster are scanned in parallel); an error from fn ends
// the walk and is returned as is.
func (p *Provider) Scan(ctx context.Context, fn func([]Lock) error) error {
	return p.scanKeys(ctx, func(ctx context.Context, keys []string) error {
		locks, err := p.readLocks(ctx, keys)
		if err != nil {
			return err
		}
		if len(locks) == 0 {
			return nil
		}
		return fn(locks)
	})
}

// List returns every lock under the namespace (see Scan). Keys may repeat when the keyspace is
// rehashed during the walk; List drops the repeats.
func (p *Provider) List(ctx context.Context) ([]Lock, error) {
	var out []Lock
	seen := map[string]bool{}
	err := p.Scan(ctx, func(batch []Lock) error {
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
func (p *Provider) Get(ctx context.Context, key string) (lock Lock, ok bool, err error) {
	locks, err := p.readLocks(ctx, []string{key})
	if err != nil || len(locks) == 0 {
		return Lock{}, false, err
	}
	return locks[0], true, nil
}

// readLocks reads owner and TTL of keys in one pipeline.
func (p *Provider) readLocks(ctx context.Context, keys []string) ([]Lock, error) {
	pipe := p.client.Pipeline()
	gets := make([]*redis.StringCmd, len(keys))
	ttls := make([]*redis.DurationCmd, len(keys))
	for i, key := range keys {
		gets[i] = pipe.Get(ctx, p.RedisKey(key))
		ttls[i] = pipe.PTTL(ctx, p.RedisKey(key))
	}
	_, _ = pipe.Exec(ctx)
	out := make([]Lock, 0, len(keys))
	for i, key := range keys {
		owner, err := gets[i].Result()
		lock := Lock{Key: key, RedisKey: p.RedisKey(key), Owner: owner}
		switch {
		case errors.Is(err, redis.Nil):
			continue // released between SCAN and GET
		case err != nil && redis.HasErrorPrefix(err, "WRONGTYPE"):
			lock.Owner, lock.Foreign = "", true
		case err != nil:
			return nil, fmt.Errorf("read %q: %w", key, err)
		}
		ttl, err := ttls[i].Result()
		if err != nil {
			return nil, fmt.Errorf("read TTL of %q: %w", key, err)
		}
		switch {
		case ttl == -2: // go-redis returns PTTL's -2 and -1 unscaled
			continue // expired between GET and PTTL
		case ttl < 0:
			lock.TTL = NoExpiry
		default:
			lock.TTL = ttl
		}
		out = append(out, lock)
	}
	return out, nil
}

// ForceRelease deletes key only if owner still holds it: the owner the operator saw. It returns
// false (and deletes nothing) when the key is gone or now held by someone else.
func (p *Provider) ForceRelease(ctx context.Context, key, owner string) (bool, error) {
	res, errs, err := p.deleteBatch(ctx, releaseScript, []string{key}, sendOnce, owner, nil, 0, true)
	if err != nil {
		err = unknownIfRan(err)
	} else {
		err = errs[0]
	}
	if err != nil {
		return false, fmt.Errorf("force-release %q: %w", key, err)
	}
	return res[0] == 1, nil
}

// ForceReleaseAny deletes key whoever holds it now and returns that owner: it reads the owner and
// deletes with a compare-and-delete, retrying if the owner changed in between. ok is false when
// the key does not exist (or is not a lock).
func (p *Provider) ForceReleaseAny(ctx context.Context, key string) (owner string, ok bool, err error) {
	for attempt := 0; attempt < 5; attempt++ {
		lock, exists, err := p.Get(ctx, key)
		if err != nil {
			return "", false, err
		}
		if !exists || lock.Foreign {
			return "", false, nil
		}
		released, err := p.ForceRelease(ctx, key, lock.Owner)
		if err != nil || released {
			return lock.Owner, released, err
		}
	}
	return "", false, fmt.Errorf("force-release %q: the owner kept changing; try again", key)
}

// Printable shows a key or an owner id as is when it is plain, and quoted in Go syntax (control
// characters escaped) when it is empty or holds spaces or characters that do not print, so the
// empty owner, a blank one and one carrying terminal escapes are seen for what they are. The
// console and the CLI show every key and owner through it.
func Printable(s string) string {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) {
		return strconv.Quote(s)
	}
	return s
}
