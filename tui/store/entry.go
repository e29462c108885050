package store

import (
	"strings"
	"time"

	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
)

// Timings of the lock states.
const (
	// GoneFor is how long a released or expired lock stays on screen as GONE.
	GoneFor = 3 * time.Second
	// RenewedFor is how long a lock shows RENEWED after its TTL jumped up.
	RenewedFor = 3 * time.Second
	// ExpiringFraction: a lock with less than this fraction of its lease left is EXPIRING.
	ExpiringFraction = 0.2
	// ExpiringFloor: a lock with less than this left is EXPIRING whatever its lease.
	ExpiringFloor = 5 * time.Second
	// renewTolerance absorbs the read jitter of PTTL: a deadline that moves later by more than
	// this is a renewal (the provider renews at least 250 ms apart).
	renewTolerance = 200 * time.Millisecond
)

// State is what the console says about a lock, in words.
type State int

// The lock states, in the order a table sorted "by attention" shows them.
const (
	StateNoTTL State = iota
	StateExpiring
	StateForeign
	StateGone
	StateRenewed
	StateHeld
)

var stateNames = [...]string{"NO TTL", "EXPIRING", "FOREIGN", "GONE", "RENEWED", "HELD"}

// String returns the state as the screen shows it.
func (s State) String() string {
	if s < 0 || int(s) >= len(stateNames) {
		return "?"
	}
	return stateNames[s]
}

// Entry is one lock as last observed. Entries are immutable: the store replaces an entry when
// the lock changes, so a View holding entries can be rendered concurrently with updates.
type Entry struct {
	// Key is the lock key without namespace.
	Key string
	// Owner is the stored owner id ("" for a foreign key).
	Owner string
	// Deadline is when the lock expires, as observed (zero when NoTTL).
	Deadline time.Time
	// NoTTL is true for a lock that never expires.
	NoTTL bool
	// Foreign is true for a key under the namespace that is not a lock (not a string).
	Foreign bool
	// Lease is the highest TTL seen for the current holding.
	Lease time.Duration
	// FirstSeen is when this console first saw the current owner holding the key: not when it
	// acquired it (a lock stuck for days reads "seen 0s" right after the console starts). The
	// holder record, where there is one, has the true start (Record.AcquiredAt).
	FirstSeen time.Time
	// Record is the lock's holder record as last read: who holds it, since when, its fencing
	// token; nil for a lock taken by a client that writes none (stock Medusa).
	Record *operator.Record
	// RenewedAt is when the TTL last jumped up (zero if never).
	RenewedAt time.Time
	// GoneAt is when the lock was seen released or expired (zero while held).
	GoneAt time.Time

	keyLower, ownerLower string
	holderLower          string // what a holder filter matches (holderText), lower case
}

func newEntry(key, owner string) *Entry {
	return &Entry{Key: key, Owner: owner, keyLower: strings.ToLower(key), ownerLower: strings.ToLower(owner),
		holderLower: strings.ToLower(NoRecordWhy)}
}

// setRecord sets e's holder record, and what a holder filter matches with it.
func (e *Entry) setRecord(r *operator.Record) {
	e.Record = r
	e.holderLower = strings.ToLower(holderText(r))
}

// TTL returns the time left at now: provider.NoExpiry for a lock (or a key of another type)
// without expiry, 0 once the deadline passed or the lock is gone. It counts down between
// observations.
func (e *Entry) TTL(now time.Time) time.Duration {
	switch {
	case !e.GoneAt.IsZero():
		return 0
	case e.NoTTL, e.Foreign && e.Deadline.IsZero():
		return provider.NoExpiry
	case e.Deadline.IsZero():
		return 0
	}
	return max(e.Deadline.Sub(now), 0)
}

// SeenFor is how long this console has seen the current owner holding the key (see
// FirstSeen): a lower bound of how long it has held it.
func (e *Entry) SeenFor(now time.Time) time.Duration {
	end := now
	if !e.GoneAt.IsZero() {
		end = e.GoneAt
	}
	return max(end.Sub(e.FirstSeen), 0)
}

// State returns the lock's state at now.
func (e *Entry) State(now time.Time) State {
	switch {
	case !e.GoneAt.IsZero():
		return StateGone
	case e.Foreign:
		return StateForeign
	case e.NoTTL:
		return StateNoTTL
	case !e.RenewedAt.IsZero() && now.Sub(e.RenewedAt) < RenewedFor:
		return StateRenewed
	}
	left := e.TTL(now)
	if left < ExpiringFloor || float64(left) < ExpiringFraction*float64(e.Lease) {
		return StateExpiring
	}
	return StateHeld
}

// Counting reports whether the entry's row changes with time alone at now: a TTL counting
// down or a transient state (GONE, RENEWED) that will end. The console ticks only then.
func (e *Entry) Counting(now time.Time) bool {
	if !e.GoneAt.IsZero() {
		return true
	}
	if e.Foreign || e.NoTTL {
		return false
	}
	return e.TTL(now) > 0 || now.Sub(e.RenewedAt) < RenewedFor
}

// Kind is the kind of an owner id: "execute" (an Execute or lease, "execute:<uuid>"),
// "anonymous" (the default owner "*") or "named" (any other id).
func Kind(owner string) string {
	switch {
	case owner == provider.DefaultOwner:
		return "anonymous"
	case strings.HasPrefix(owner, provider.ExecuteOwnerPrefix):
		return "execute"
	default:
		return "named"
	}
}
