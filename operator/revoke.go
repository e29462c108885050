package operator

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/internal/lockwire"
	"github.com/locktui/locktui/provider"
)

// Force-release (docs/safety.md, "Force-release"): tell the holder first, then free. A live
// lease of ours is revoked, not deleted: its holder ends the lease at once (its ctx is
// cancelled, a bridge client's AbortSignal aborts, `locktui run` stops its command) and then
// releases the key; no waiter can take the key before that, or before it expires with its TTL
// if the holder never releases it (its renewals fail from the revocation on). A hold that cannot
// be told (a stock process's, a plain Acquire's, a lease that stopped renewing) is freed at once,
// and FreeNow frees any hold at once.

// ReleaseMode says how a force-release treats a live lease of ours.
type ReleaseMode int

const (
	// TellHolderFirst revokes a live lease (HolderTold) and frees any other hold at once.
	TellHolderFirst ReleaseMode = iota
	// FreeNow deletes the key at once, whatever holds it: for the operator who knows that the
	// holder is gone, or who accepts that it may still be inside.
	FreeNow
)

// arg is the mode as revoke.lua's ARGV[3] takes it.
func (m ReleaseMode) arg() string {
	if m == FreeNow {
		return lockwire.RevokeNow
	}
	return lockwire.RevokeTell
}

// Revocation is what a force-release did to a key.
type Revocation int

const (
	// NotReleased: nothing was done: the key is gone, held by someone else or no longer as seen,
	// or is not a lock.
	NotReleased Revocation = iota
	// Freed: the key was deleted at once: its holder cannot be told, or FreeNow was asked.
	Freed
	// HolderTold: the holder, a live lease of ours, was told to end its lease; it releases the
	// key itself, and at the latest the key expires with its TTL.
	HolderTold
)

// Done reports whether the force-release did anything.
func (r Revocation) Done() bool { return r != NotReleased }

// String names the outcome, for logs and %v: "not released", "freed", "holder told" (the audit
// trail has results of its own: audit.Released.Result).
func (r Revocation) String() string {
	switch r {
	case Freed:
		return "freed"
	case HolderTold:
		return "holder told"
	}
	return "not released"
}

// CannotBeTold says, for a hold as seen (a Lock read by Get or a scan), why a force-release
// frees it at once instead of telling its holder first: "" when it is a lease that can be told.
// A lease whose lock has a tenth of its TTL left or less has passed its holder's own deadline
// (it stopped renewing): its holder no longer believes, and revoke.lua frees it.
func CannotBeTold(l Lock) string {
	switch rec := l.Record; {
	case rec == nil:
		return "no holder record: a stock Medusa process (or an older client) holds it, which cannot be told"
	case rec.Lease == 0:
		return "a plain acquisition (not a lease) holds it: its holder is never told of anything"
	case l.TTL != provider.NoExpiry && l.TTL <= provider.SafetyMargin(rec.Lease):
		return "its lease stopped renewing: its holder's own deadline has passed"
	}
	return ""
}

// revocation reads revoke.lua's reply.
func revocation(status int64) Revocation {
	switch status {
	case 1:
		return Freed
	case 2:
		return HolderTold
	}
	return NotReleased
}

// ForceReleaseOwner force-releases key only while owner still holds it: the owner the operator
// saw, whichever hold of that owner it is now. It returns NotReleased when the key is gone or
// now held by someone else.
func (in *Inspector) ForceReleaseOwner(ctx context.Context, key, owner string, mode ReleaseMode) (Revocation, error) {
	return in.revokeKey(ctx, key, owner, lockwire.AnyHold, mode)
}

// ForceReleaseHold force-releases seen.Key only while it is still the hold seen describes (a Lock
// read by Get or a scan: what the operator looked at): the same owner and, for a hold of our
// clients, the same fencing token and holding process in its holder record. So a lock that one
// of our clients took again under the same owner since it was read (an owner id that several
// holds share, such as "*" or a named owner), or that another process re-entered, is not cut
// off, and the holder the record names is the one cut off; renewals and re-entries by the
// process seen do not change the hold. A hold seen without a holder record (stock Medusa's) must
// still have none; stock writes nothing else that tells two of its holds apart, so a stock
// process's new hold under the same owner is taken for the one seen. It returns NotReleased when
// the key is gone, held by someone else or no longer as seen, or is not a lock.
func (in *Inspector) ForceReleaseHold(ctx context.Context, seen Lock, mode ReleaseMode) (Revocation, error) {
	if seen.Foreign {
		return NotReleased, nil
	}
	return in.revokeKey(ctx, seen.Key, seen.Owner, holdPin(seen.Record), mode)
}

// revokeKey runs revoke.lua on key for owner and pin (see holdPin).
func (in *Inspector) revokeKey(ctx context.Context, key, owner, pin string, mode ReleaseMode) (Revocation, error) {
	res, errs, err := in.revoke(ctx, []string{key}, owner, pin, mode)
	if err == nil {
		err = errs[0]
	}
	if err != nil {
		return NotReleased, fmt.Errorf("force-release %q: %w", key, err)
	}
	return res[0], nil
}

// revoke runs revoke.lua on each of keys for owner and pin, in one pipeline that go-redis never
// resends (a resend after a lost reply could cut off a hold taken in between), as lockwire.Eval
// does; a transport error after which the script may have run matches
// provider.ErrOutcomeUnknown. The Observer hears of every key deleted.
func (in *Inspector) revoke(ctx context.Context, keys []string, owner, pin string, mode ReleaseMode) ([]Revocation, []error, error) {
	args := []any{owner, pin, mode.arg()}
	res, errs, err := lockwire.Eval(ctx, &in.run, lockwire.Revoke, keys, true, func(int) []any { return args },
		(*redis.Cmd).Int64)
	out := make([]Revocation, len(keys))
	for i, key := range keys {
		if errs[i] == nil {
			if out[i] = revocation(res[i]); out[i] == Freed {
				in.released(key, owner)
			}
		}
	}
	if err != nil && lockwire.MaybeRan(err) {
		err = fmt.Errorf("%w: %w", provider.ErrOutcomeUnknown, err)
	}
	return out, errs, err
}

// holdPin names a hold for revoke.lua: its fencing token and holding process, as parseRecord
// read them, joined by NUL bytes, or "none" for a hold without a holder record (or with one
// written before records kept a token).
func holdPin(rec *Record) string {
	if rec == nil || rec.FencingToken == 0 {
		return "none"
	}
	return strings.Join([]string{strconv.FormatInt(rec.FencingToken, 10), rec.Host, strconv.Itoa(rec.PID),
		rec.Program, rec.Client}, "\x00")
}

// ForceReleaseAny force-releases key whoever holds it now and returns that owner: it reads the
// owner and force-releases it with ForceReleaseOwner, retrying if the owner changed in between.
// The Revocation is NotReleased when the key does not exist (or is not a lock).
func (in *Inspector) ForceReleaseAny(ctx context.Context, key string, mode ReleaseMode) (owner string, r Revocation, err error) {
	for attempt := 0; attempt < 5; attempt++ {
		lock, exists, err := in.Get(ctx, key)
		if err != nil {
			return "", NotReleased, err
		}
		if !exists || lock.Foreign {
			return "", NotReleased, nil
		}
		r, err := in.ForceReleaseOwner(ctx, key, lock.Owner, mode)
		if err != nil || r.Done() {
			return lock.Owner, r, err
		}
	}
	return "", NotReleased, fmt.Errorf("force-release %q: the owner kept changing; try again", key)
}

// ReleaseAllWith is provider's ReleaseAll paced by opts, in mode, telling released of each lock
// released. It walks the namespace as ScanWith does (SCAN on every master of a Cluster, and a
// read of each key found) and deletes the keys read as owner's ("" means "*") with one atomic
// compare-and-unlink per key, pipelined per batch, so a key that changed owner since it was read
// is never deleted. opts.Pace is called before each round trip, the deletes of a batch counted
// as one read per key. released, if not nil, is called with each lock deleted (or whose holder
// was told) as it was read just before (its Record names the holder cut off), never
// concurrently. It returns how many keys it deleted or told, also when the walk ends early with
// an error (from Redis, ctx or opts.Pace). A key whose delete Redis refused (a reply error such
// as READONLY) does not stop the walk; the first such error is returned at its end, with its key.
//
// mode is TellHolderFirst for an operator's release of an owner's locks (the console's D,
// release-all): the live leases among them are told first (HolderTold, see ForceReleaseHold),
// counted with the keys freed. FreeNow frees every one at once, as provider's ReleaseAll does,
// and their holders hear of it.
func (in *Inspector) ReleaseAllWith(ctx context.Context, owner string, opts ScanOptions, mode ReleaseMode,
	released func(Lock, Revocation)) (int, error) {
	if owner == "" {
		owner = provider.DefaultOwner
	}
	n := 0
	var refused error // the first key whose delete Redis refused
	err := in.ScanWith(ctx, opts, func(batch []Lock) error {
		var keys []string
		var mine []Lock
		for _, l := range batch {
			if !l.Foreign && l.Owner == owner {
				keys = append(keys, l.Key)
				mine = append(mine, l)
			}
		}
		if len(keys) == 0 {
			return nil
		}
		if opts.Pace != nil {
			if err := opts.Pace(ctx, 0, len(keys)); err != nil {
				return err
			}
		}
		res, errs, err := in.revoke(ctx, keys, owner, lockwire.AnyHold, mode)
		if err != nil {
			return err
		}
		for i, key := range keys {
			switch {
			case errs[i] != nil:
				if refused == nil {
					refused = fmt.Errorf("release %q: %w", key, errs[i])
				}
			case res[i].Done():
				n++
				if released != nil {
					released(mine[i], res[i])
				}
			}
		}
		return nil
	})
	if err == nil {
		err = refused
	}
	if err != nil {
		return n, fmt.Errorf("release all locks of %q: %w", owner, err)
	}
	return n, nil
}
