package provider

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Force-release, for the operator (docs/safety.md, "Force-release"): tell the holder first, then
// free. A live lease of ours is revoked, not deleted: its holder ends the lease at once (its ctx
// is cancelled, a bridge client's AbortSignal aborts, `locktui run` stops its command) and then
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
		return revokeNow
	}
	return "tell"
}

// revokeNow is revoke.lua's mode that deletes whatever holds the key (releaseAll's, FreeNow).
const revokeNow = "now"

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
	case l.TTL != NoExpiry && l.TTL <= SafetyMargin(rec.Lease):
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
func (p *Provider) ForceReleaseOwner(ctx context.Context, key, owner string, mode ReleaseMode) (Revocation, error) {
	return p.revoke(ctx, key, owner, anyHold, mode)
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
func (p *Provider) ForceReleaseHold(ctx context.Context, seen Lock, mode ReleaseMode) (Revocation, error) {
	if seen.Foreign {
		return NotReleased, nil
	}
	return p.revoke(ctx, seen.Key, seen.Owner, holdPin(seen.Record), mode)
}

// revoke runs revoke.lua on key for owner and pin (see holdPin).
func (p *Provider) revoke(ctx context.Context, key, owner, pin string, mode ReleaseMode) (Revocation, error) {
	res, errs, err := p.deleteBatch(ctx, revokeScript, []string{key}, sendOnce, owner, []any{pin, mode.arg()}, 0, true)
	if err != nil {
		err = unknownIfRan(err)
	} else {
		err = errs[0]
	}
	if err != nil {
		return NotReleased, fmt.Errorf("force-release %q: %w", key, err)
	}
	return revocation(res[0]), nil
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
func (p *Provider) ForceReleaseAny(ctx context.Context, key string, mode ReleaseMode) (owner string, r Revocation, err error) {
	for attempt := 0; attempt < 5; attempt++ {
		lock, exists, err := p.Get(ctx, key)
		if err != nil {
			return "", NotReleased, err
		}
		if !exists || lock.Foreign {
			return "", NotReleased, nil
		}
		r, err := p.ForceReleaseOwner(ctx, key, lock.Owner, mode)
		if err != nil || r.Done() {
			return lock.Owner, r, err
		}
	}
	return "", NotReleased, fmt.Errorf("force-release %q: the owner kept changing; try again", key)
}
