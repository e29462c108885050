package audit

import (
	"cmp"
	"context"
	"time"

	"github.com/locktui/locktui/internal/sleep"
	"github.com/locktui/locktui/operator"
)

// WriteTimeout bounds each audit write of a Releaser. The deadline is the write's own, detached
// from the release's context: a release that used up its time, or a tool that is quitting,
// still leaves its record.
const WriteTimeout = 5 * time.Second

// Releaser is the one path by which the console and the CLI release locks: it releases through
// an operator.Inspector and records every release, whatever its outcome, in Sink.
type Releaser struct {
	// Inspector reads and releases the locks. Required.
	Inspector *operator.Inspector
	// Sink receives a record of every release; nil: releases are not audited.
	Sink Sink
	// Operator, Namespace and Server fill every record (Operator "" means Operator()).
	Operator, Namespace, Server string
	// Scan paces the walk of the namespace that ReleaseOwner makes (operator ReleaseAllWith):
	// the console and the CLI pass their read budget, so a release of an owner's locks loads
	// Redis no more than a refresh or a list does. The zero value walks as fast as Redis answers.
	Scan operator.ScanOptions
	// OnReleased, if not nil, is called with each lock ReleaseOwner deletes or whose holder it
	// tells, as it does (never concurrently): a console shows the count so far while a long walk
	// goes on.
	OnReleased func(operator.Lock, operator.Revocation)
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
	// How is what a force-release did: Freed, HolderTold (nothing deleted yet: AwaitFreed
	// follows the key), or NotReleased.
	How operator.Revocation
	// Owner is the owner released: the one asked for, or for ForceReleaseAny the one found.
	Owner string
	// Holder names the process a force-release cut off or told, as the record does ("" when
	// nothing was done or the lock could not be read).
	Holder string
	// Err is why the release failed (nil when it ran, also when it deleted nothing).
	Err error
	// AuditErr is why the record could not be written (nil when it was, or with no Sink). The
	// release has happened all the same: the caller must say so, never silently.
	AuditErr error
}

// Result is the record's Result for the outcome: ResultError, ResultHolderTold, ResultNotHeld or
// ResultReleased.
func (r Released) Result() string {
	switch {
	case r.Err != nil:
		return ResultError(r.Err)
	case r.How == operator.HolderTold:
		return ResultHolderTold
	case r.Count == 0:
		return ResultNotHeld
	}
	return ResultReleased
}

// ForceReleaseOwner force-releases key only while owner still holds it (operator
// ForceReleaseOwner: release --owner) and records it as ActionForceRelease. A key of another type
// is not released and is no error.
func (r *Releaser) ForceReleaseOwner(ctx context.Context, key, owner string, mode operator.ReleaseMode) Released {
	holder := r.holder(ctx, key)
	how, err := r.Inspector.ForceReleaseOwner(ctx, key, owner, mode)
	if err != nil && r.foreign(ctx, key) {
		err = nil // WRONGTYPE: not a lock, so not held
	}
	return r.recordKey(ctx, ActionForceRelease, key, owner, holder.of(owner), mode, how, err)
}

// ForceReleaseHold force-releases seen.Key only while it is still the hold seen, as read before
// (operator ForceReleaseHold: the console's d, which releases the hold the operator confirmed, not
// one its owner took since), and records it as ActionForceRelease naming that hold's holder.
func (r *Releaser) ForceReleaseHold(ctx context.Context, seen operator.Lock, mode operator.ReleaseMode) Released {
	how, err := r.Inspector.ForceReleaseHold(ctx, seen, mode)
	return r.recordKey(ctx, ActionForceRelease, seen.Key, seen.Owner, holderOf(seen), mode, how, err)
}

// ForceReleaseAny force-releases key whoever holds it (operator ForceReleaseAny: release
// --force) and records it as ActionForceReleaseAny with the owner it had.
func (r *Releaser) ForceReleaseAny(ctx context.Context, key string, mode operator.ReleaseMode) Released {
	holder := r.holder(ctx, key)
	owner, how, err := r.Inspector.ForceReleaseAny(ctx, key, mode)
	return r.recordKey(ctx, ActionForceReleaseAny, key, owner, holder.of(owner), mode, how, err)
}

// recordKey records the force-release of one key and returns its outcome; holder names the
// process cut off or told ("" when unknown).
func (r *Releaser) recordKey(ctx context.Context, action, key, owner, holder string, mode operator.ReleaseMode,
	how operator.Revocation, err error) Released {
	out := Released{Owner: owner, How: how, Err: err}
	if how == operator.Freed {
		out.Count = 1
	}
	if how.Done() {
		out.Holder = holder
	}
	out.AuditErr = r.record(ctx, Record{Action: action, Key: key, Owner: owner, Holder: out.Holder, Mode: modeName(mode)}, out)
	return out
}

// modeName is a mode as records name it.
func modeName(m operator.ReleaseMode) string {
	if m == operator.FreeNow {
		return ModeFreeNow
	}
	return ModeTellFirst
}

// freedPoll is how often AwaitFreed reads the key.
const freedPoll = 50 * time.Millisecond

// AwaitFreed follows a force-release that told the holder first (out.How HolderTold, at toldAt):
// it reads key every freedPoll until it no longer holds owner's hold (released by its holder, or
// expired) or ctx ends, and records ActionFreed with ToldAt. It returns when the key was freed
// (zero when ctx ended first: ResultStillHeld). The reads are one key's, a few a second.
func (r *Releaser) AwaitFreed(ctx context.Context, key string, out Released, toldAt time.Time) (time.Time, Released) {
	var freed time.Time
	for {
		l, held, err := r.Inspector.Get(ctx, key)
		if err == nil && (!held || l.Owner != out.Owner || l.Record == nil || l.Record.RevokedAt.IsZero()) {
			freed = time.Now()
			break
		}
		if !sleep.For(ctx, freedPoll) {
			break
		}
	}
	done := Released{Owner: out.Owner, Holder: out.Holder, How: out.How}
	result := ResultReleased
	if freed.IsZero() {
		result = ResultStillHeld
	} else {
		done.Count = 1
	}
	rec := Record{Action: ActionFreed, Key: key, Owner: out.Owner, Holder: out.Holder, Mode: ModeTellFirst, ToldAt: toldAt}
	done.AuditErr = r.recordAs(ctx, rec, done.Count, result)
	return freed, done
}

// seenHolder is the lock a force-release is about to cut off, as read just before it.
type seenHolder struct{ lock *operator.Lock }

// holder reads key's lock and its holder record before a force-release, for the audit record
// (a read that fails leaves the record without a holder: the release goes on).
func (r *Releaser) holder(ctx context.Context, key string) seenHolder {
	if r.Sink == nil {
		return seenHolder{}
	}
	l, held, err := r.Inspector.Get(ctx, key)
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
// (operator.NoHolderRecord).
func holderOf(l operator.Lock) string {
	if l.Record == nil {
		return operator.NoHolderRecord
	}
	return l.Record.String()
}

// ReleaseOwner force-releases every lock of owner (operator ReleaseAllWith in mode, paced by
// Scan: compare-and-unlink per key, a live lease's holder told first unless mode is FreeNow;
// the console's D and release-all) and records it as ActionReleaseOwner, naming each lock
// deleted or told with the holder, as read in the same paced walk just before. The record is written also when the walk failed
// part-way: it names the locks deleted until then. A release of more than LocksPerRecord
// locks writes its record in parts (Record.Part), each full one as soon as the next lock is
// deleted; AuditErr is the first part's error that could not be written.
func (r *Releaser) ReleaseOwner(ctx context.Context, owner string, mode operator.ReleaseMode) Released {
	perRecord := r.LocksPerRecord
	if perRecord <= 0 {
		perRecord = DefaultLocksPerRecord
	}
	var locks []LockReleased
	var part int
	var auditErr error
	keep := func(l operator.Lock, how operator.Revocation) {
		if r.Sink != nil {
			if len(locks) == perRecord { // a full part, and more to come: the last part is never empty
				part++
				err := r.record(ctx, Record{Action: ActionReleaseOwner, Owner: owner, Locks: locks, Part: part, Mode: modeName(mode)},
					Released{Count: len(locks), Owner: owner})
				auditErr = cmp.Or(auditErr, err)
				locks = nil
			}
			locks = append(locks, LockReleased{Key: l.Key, Owner: l.Owner, Holder: holderOf(l), Told: how == operator.HolderTold})
		}
		if r.OnReleased != nil {
			r.OnReleased(l, how)
		}
	}
	n, err := r.Inspector.ReleaseAllWith(ctx, owner, r.Scan, mode, keep)
	out := Released{Count: n, Owner: owner, Err: err}
	last := Record{Action: ActionReleaseOwner, Owner: owner, Locks: locks, Mode: modeName(mode)}
	if part > 0 {
		last.Part = part + 1
	}
	out.AuditErr = cmp.Or(auditErr, r.record(ctx, last, out))
	return out
}

func (r *Releaser) foreign(ctx context.Context, key string) bool {
	l, held, err := r.Inspector.Get(ctx, key)
	return err == nil && held && l.Foreign
}

// record writes rec with the outcome out.
func (r *Releaser) record(ctx context.Context, rec Record, out Released) error {
	return r.recordAs(ctx, rec, out.Count, out.Result())
}

// recordAs writes rec with count and result.
func (r *Releaser) recordAs(ctx context.Context, rec Record, count int, result string) error {
	if r.Sink == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), WriteTimeout)
	defer cancel()
	rec.Time = time.Now()
	rec.Operator, rec.Namespace, rec.Server = r.Operator, r.Namespace, r.Server
	rec.Count, rec.Result = count, result
	return r.Sink.Write(ctx, rec)
}
