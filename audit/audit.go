// Package audit records every change the console makes to the locks (force releases, releases
// of all the locks of an owner), so an operator's action can be traced afterwards. A Sink
// stores Records: File appends JSON lines to a local file, Stream adds entries to a Redis
// stream, Multi writes to several. A write that fails is returned to the caller, who must show
// it: an action that could not be audited is never silent.
package audit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"time"
)

// Actions the console performs.
const (
	// ActionForceRelease deletes one key if the owner the operator saw still holds it.
	ActionForceRelease = "force_release"
	// ActionForceReleaseAny deletes one key whoever holds it.
	ActionForceReleaseAny = "force_release_any"
	// ActionReleaseOwner deletes every lock of one owner (operator ReleaseAllWith).
	ActionReleaseOwner = "release_owner"
	// ActionFreed follows a force-release that told the holder first (ResultHolderTold): the
	// key was freed, by its holder's release or its TTL, at the record's Time (ToldAt says
	// when the holder was told), or the wait for it ended (ResultStillHeld).
	ActionFreed = "freed"
)

// Results of an action; a failure is ResultError(err).
const (
	// ResultReleased: the action deleted what it was asked to.
	ResultReleased = "released"
	// ResultNotHeld: nothing was deleted: the key was gone or held by another owner.
	ResultNotHeld = "not_held"
	// ResultHolderTold: the key's holder, a live lease, was told to end its lease and release
	// the key; nothing was deleted yet (an ActionFreed record follows when it is freed).
	ResultHolderTold = "holder_told"
	// ResultStillHeld (ActionFreed): the wait for the told holder's release ended first.
	ResultStillHeld = "still_held"
)

// Modes of a force-release (Record.Mode).
const (
	// ModeTellFirst tells a live lease's holder first (operator.TellHolderFirst).
	ModeTellFirst = "tell_first"
	// ModeFreeNow frees the key at once whatever holds it (operator.FreeNow).
	ModeFreeNow = "free_now"
)

// ResultError renders a failed action's result: "error: " followed by the error.
func ResultError(err error) string { return "error: " + err.Error() }

// Record is one audited action.
type Record struct {
	// Time is when the action was done; a zero Time is set to the time of the write.
	Time time.Time `json:"time"`
	// Operator is who did it, "user@host"; empty means Operator().
	Operator string `json:"operator"`
	// Action is what was done, e.g. ActionForceRelease.
	Action string `json:"action"`
	// Key is the lock key without namespace ("" for an action on an owner).
	Key string `json:"key"`
	// Owner is the owner the action targeted.
	Owner string `json:"owner"`
	// Result is ResultReleased, ResultNotHeld or ResultError(err).
	Result string `json:"result"`
	// Mode, for a force-release, is ModeTellFirst or ModeFreeNow.
	Mode string `json:"mode,omitempty"`
	// ToldAt, for ActionFreed, is when the holder was told (the Time of the force-release).
	ToldAt time.Time `json:"told_at,omitzero"`
	// Count is the number of keys deleted; in a part of a release of an owner's locks that is
	// not the last (Part), the number of locks that part names.
	Count int `json:"count"`
	// Namespace is the key prefix the console works in.
	Namespace string `json:"namespace"`
	// Server is the Redis server, with any password redacted.
	Server string `json:"server"`
	// Holder, for a force-release, names the process it cut off, from the lock's holder
	// record (operator.Record.String), or operator.NoHolderRecord when the lock had none; ""
	// when nothing was cut off, or the lock could not be read or was no longer the owner's. The
	// record is the one read just before the delete, or for the console's d the one of the hold
	// the operator confirmed, which is the hold deleted (Releaser.ForceReleaseHold).
	Holder string `json:"holder,omitempty"`
	// Locks, for ActionReleaseOwner, names each lock deleted, in the order deleted, with the
	// holder it cut off as read in the same walk just before the delete; empty when none was.
	// At most Releaser.LocksPerRecord: see Part.
	Locks []LockReleased `json:"locks,omitempty"`
	// Part numbers the records of one release of an owner's locks that deleted more than
	// Releaser.LocksPerRecord locks (1, 2, …; 0 when one record names them all): each full part
	// is written as the walk goes, and the last one, with the rest of the locks, the outcome and
	// the count of all the locks deleted, when it ends.
	Part int `json:"part,omitempty"`
}

// LockReleased is one lock that a release of an owner's locks deleted.
type LockReleased struct {
	// Key is the lock key without namespace.
	Key string `json:"key"`
	// Owner is the owner it had (the owner released).
	Owner string `json:"owner"`
	// Holder names the process cut off, as Record.Holder does: its holder record
	// (operator.Record.String) or operator.NoHolderRecord.
	Holder string `json:"holder"`
	// Told is true when the lock was a live lease whose holder was told first, not deleted: it
	// releases the key itself, or the key expires with its TTL.
	Told bool `json:"told,omitempty"`
}

// Sink stores audit records. Implementations are safe for concurrent use.
type Sink interface {
	// Write stores r, or returns why it could not.
	Write(ctx context.Context, r Record) error
}

// Operator returns "user@host" for the current process, with "unknown" for a part that
// cannot be found.
func Operator() string {
	name := "unknown"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	} else if env := os.Getenv("USER"); env != "" {
		name = env
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return name + "@" + host
}

// complete fills the defaults of a record about to be written.
func complete(r Record) Record {
	if r.Time.IsZero() {
		r.Time = time.Now()
	}
	r.Time = r.Time.UTC()
	if r.Operator == "" {
		r.Operator = Operator()
	}
	return r
}

// Multi returns a Sink that writes every record to each of sinks, even when one fails, and
// returns the failures joined. nil sinks are skipped.
func Multi(sinks ...Sink) Sink {
	var m multi
	for _, s := range sinks {
		if s != nil {
			m = append(m, s)
		}
	}
	return m
}

type multi []Sink

func (m multi) Write(ctx context.Context, r Record) error {
	r = complete(r) // one time and operator for every copy
	var errs []error
	for _, s := range m {
		if err := s.Write(ctx, r); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("audit: %w", errors.Join(errs...))
	}
	return nil
}
