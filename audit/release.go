package audit

import (
	"cmp"
	"context"
	"time"

	"github.com/locktui/locktui/provider"
)

// WriteTimeout bounds each audit write of a Releaser. The deadline is the write's own, detached
// from the release's context: a release that used up its time, or a tool that is quitting,
// still leaves its record.
const WriteTimeout = 5 * time.Second

// Releaser is the one path by which the console and the CLI release locks: it releases through
// the provider and records every release, whatever its outcome, in Sink.
type Releaser struct {
	// Provider releases the locks. Required.
	Provider *provider.Provider
	// Sink receives a record of every release; nil: releases are not audited.
	Sink Sink
	// Operator, Namespace and Server fill every record (Operator "" means Operator()).
	Operator, Namespace, Server string
	// Scan paces the walk of the namespace that ReleaseOwner makes (provider.ReleaseAllWith):
	// the console and the CLI pass their read budget, so a release of an owner's locks loads
	// Redis no more than a refresh or a list does. The zero value walks as fast as Redis answers.
	Scan provider.ScanOptions
	// OnReleased, if not nil, is called with each lock ReleaseOwner deletes, as it deletes it
	// (never concurrently): a console shows the count so far while a long walk goes on.
	OnReleased func(provider.Lock)
	// LocksPerRecord is the most locks one record of ReleaseOwner names (Record.Part); 0 means
	// DefaultLocksPerRecord.
	LocksPerRecord int
}

// DefaultLocksPerRecord bounds the locks one audit record names. One record of a release of
// 100,000 locks would be a single stream entry of some 15 MB, written at once to the Redis
// the tools watch; a part of 1,000 is about 150 KB.
const DefaultLocksPerRecord = 1000

// Released is the outcome of one release.
type Released struct {
	// Count is the number of keys deleted.
	Count int
	// Owner is the owner released: the one asked for, or for ForceReleaseAny the one found.
	Owner string
	// Err is why the release failed (nil when it ran, also when it deleted nothing).
	Err error
	// AuditErr is why the record could not be written (nil when it was, or with no Sink). The
	// release has happened all the same: the caller must say so, never silently.
	AuditErr error
}

// Result is the record's Result for the outcome: ResultError, ResultNotHeld or ResultReleased.
func (r Released) Result() string {
	switch {
	case r.Err != nil:
		return ResultError(r.Err)
	case r.Count == 0:
		return ResultNotHeld
	}
	return ResultReleased
}

// ForceReleaseOwner deletes key only while owner still holds it (provider ForceReleaseOwner: the
// compare-and-delete of the console's d and of release --owner) and records it as
// ActionForceRelease. A key of another type is not deleted and is no error.
func (r *Releaser) ForceReleaseOwner(ctx context.Context, key, owner string) Released {
	holder := r.holder(ctx, key)
	ok, err := r.Provider.ForceReleaseOwner(ctx, key, owner)
	if err != nil && r.foreign(ctx, key) {
		err = nil // WRONGTYPE: not a lock, so not held
	}
	return r.recordKey(ctx, ActionForceRelease, key, owner, holder.of(owner), ok, err)
}

// ForceReleaseHold deletes seen.Key only while it is still the hold seen, as read before (provider
// ForceReleaseHold: the console's d, which releases the hold the operator confirmed, not one its
// owner took since), and records it as ActionForceRelease naming that hold's holder.
func (r *Releaser) ForceReleaseHold(ctx context.Context, seen provider.Lock) Released {
	ok, err := r.Provider.ForceReleaseHold(ctx, seen)
	return r.recordKey(ctx, ActionForceRelease, seen.Key, seen.Owner, holderOf(seen), ok, err)
}

// ForceReleaseAny deletes key whoever holds it (provider ForceReleaseAny: release --force) and
// records it as ActionForceReleaseAny with the owner it had.
func (r *Releaser) ForceReleaseAny(ctx context.Context, key string) Released {
	holder := r.holder(ctx, key)
	owner, ok, err := r.Provider.ForceReleaseAny(ctx, key)
	return r.recordKey(ctx, ActionForceReleaseAny, key, owner, holder.of(owner), ok, err)
}

// recordKey records the release of one key, deleted or not (ok), and returns its outcome;
// holder names the process cut off ("" when unknown).
func (r *Releaser) recordKey(ctx context.Context, action, key, owner, holder string, ok bool, err error) Released {
	out := Released{Owner: owner, Err: err}
	if ok {
		out.Count = 1
	}
	if !ok {
		holder = "" // nothing was cut off
	}
	out.AuditErr = r.record(ctx, Record{Action: action, Key: key, Owner: owner, Holder: holder}, out)
	return out
}

// seenHolder is the lock a force-release is about to cut off, as read just before it.
type seenHolder struct{ lock *provider.Lock }

// holder reads key's lock and its holder record before a force-release, for the audit record
// (a read that fails leaves the record without a holder: the release goes on).
func (r *Releaser) holder(ctx context.Context, key string) seenHolder {
	if r.Sink == nil {
		return seenHolder{}
	}
	l, held, err := r.Provider.Get(ctx, key)
	if err != nil || !held {
		return seenHolder{}
	}
	return seenHolder{&l}
}

// of names the holder when owner, the owner released, is the one read (holderOf); "" when the
// lock could not be read or was another owner's.
func (h seenHolder) of(owner string) string {
	if h.lock == nil || h.lock.Owner != owner {
		return ""
	}
	return holderOf(*h.lock)
}

// holderOf names the process that holds l: its holder record, or that it has none
// (provider.NoHolderRecord).
func holderOf(l provider.Lock) string {
	if l.Record == nil {
		return provider.NoHolderRecord
	}
	return l.Record.String()
}

// ReleaseOwner deletes every lock of owner (provider ReleaseAllWith, paced by Scan:
// compare-and-unlink per key; the console's D and release-all) and records it as
// ActionReleaseOwner, naming each lock deleted with the holder it cut off, as read in the same
// paced walk just before the delete. The record is written also when the walk failed
// part-way: it names the locks deleted until then. A release of more than LocksPerRecord
// locks writes its record in parts (Record.Part), each full one as soon as the next lock is
// deleted; AuditErr is the first part's error that could not be written.
func (r *Releaser) ReleaseOwner(ctx context.Context, owner string) Released {
	perRecord := r.LocksPerRecord
	if perRecord <= 0 {
		perRecord = DefaultLocksPerRecord
	}
	var locks []LockReleased
	var part int
	var auditErr error
	keep := func(l provider.Lock) {
		if r.Sink != nil {
			if len(locks) == perRecord { // a full part, and more to come: the last part is never empty
				part++
				err := r.record(ctx, Record{Action: ActionReleaseOwner, Owner: owner, Locks: locks, Part: part},
					Released{Count: len(locks), Owner: owner})
				auditErr = cmp.Or(auditErr, err)
				locks = nil
			}
			locks = append(locks, LockReleased{Key: l.Key, Owner: l.Owner, Holder: holderOf(l)})
		}
		if r.OnReleased != nil {
			r.OnReleased(l)
		}
	}
	n, err := r.Provider.ReleaseAllWith(ctx, owner, r.Scan, keep)
	out := Released{Count: n, Owner: owner, Err: err}
	last := Record{Action: ActionReleaseOwner, Owner: owner, Locks: locks}
	if part > 0 {
		last.Part = part + 1
	}
	out.AuditErr = cmp.Or(auditErr, r.record(ctx, last, out))
	return out
}

func (r *Releaser) foreign(ctx context.Context, key string) bool {
	l, held, err := r.Provider.Get(ctx, key)
	return err == nil && held && l.Foreign
}

// record writes rec with the outcome out.
func (r *Releaser) record(ctx context.Context, rec Record, out Released) error {
	if r.Sink == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), WriteTimeout)
	defer cancel()
	rec.Time = time.Now()
	rec.Operator, rec.Namespace, rec.Server = r.Operator, r.Namespace, r.Server
	rec.Count, rec.Result = out.Count, out.Result()
	return r.Sink.Write(ctx, rec)
}
