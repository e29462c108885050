package provider

import (
	"errors"
	"sync"
)

// Holders hear their keys (docs/safety.md): while a Provider holds leases, its wake-up listener
// runs (listen.go) and tells each lease what it hears about the lease's keys, before it wakes
// this Provider's waiters:
//
//   - an operator's force-release of the lease (revoke.lua's "!revoke <claim>" announcement):
//     the lease ends with ErrRevoked, and its holder releases the key;
//   - a delete of the key by any script of ours (the free announcements on FreeChannel) and, on
//     a server with keyspace notifications, a delete, expiry or eviction by anyone: the lease
//     checks its keys at once (extend.lua's check) instead of at its next renewal, and is lost
//     if a key is gone or taken. (A message may be about an earlier holder's release, heard
//     after this lease took the key again: the check tells, for one round trip, the same one a
//     waiter needs to take it.)
//
// A lease that hears nothing (the listener is down) learns the same at its next renewal.

// ErrRevoked is the cause (matched through a lease's ErrLockLost) of a lease ended by an
// operator's force-release: the key stays held until the holder releases it or it expires.
var ErrRevoked = errors.New("provider: force-released by an operator")

// keyGoneError is the cause of a lease lost because the listener heard that one of its keys was
// deleted, expired or evicted.
type keyGoneError struct{ event string }

func (e keyGoneError) Error() string {
	return "Redis reported the key " + e.event + " (" + heardWhat[e.event] + ")"
}

// heardWhat explains the events a holder hears.
var heardWhat = map[string]string{
	"freed":   "deleted by a release, force-release or releaseAll of another caller",
	"del":     "deleted",
	"unlink":  "deleted",
	"expired": "its TTL ran out",
	"evicted": "Redis evicted it under maxmemory: see docs/safety.md",
}

// holders are a Provider's live leases by key (without namespace). The zero value is ready.
type holders struct {
	mu sync.Mutex
	by map[string]map[*Lease]struct{}
}

// add registers l under each of its keys.
func (h *holders) add(l *Lease) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.by == nil {
		h.by = map[string]map[*Lease]struct{}{}
	}
	for _, k := range l.keys {
		if h.by[k] == nil {
			h.by[k] = map[*Lease]struct{}{}
		}
		h.by[k][l] = struct{}{}
	}
}

// remove takes l off; it reports whether l was registered.
func (h *holders) remove(l *Lease) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	found := false
	for _, k := range l.keys {
		if _, ok := h.by[k][l]; ok {
			found = true
			delete(h.by[k], l)
			if len(h.by[k]) == 0 {
				delete(h.by, k)
			}
		}
	}
	return found
}

// of returns the leases holding key.
func (h *holders) of(key string) []*Lease {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*Lease, 0, len(h.by[key]))
	for l := range h.by[key] {
		out = append(out, l)
	}
	return out
}

// revoked tells the leases of key that an operator revoked the hold of claim: that lease and
// every other lease of this Provider on key under the same owner (they share the hold) end.
func (h *holders) revoked(key, claim string) {
	leases := h.of(key)
	owner, found := "", false
	for _, l := range leases {
		if l.claim == claim {
			owner, found = l.owner, true
		}
	}
	if !found {
		return
	}
	for _, l := range leases {
		if l.owner == owner {
			l.lose(l.order, ErrRevoked)
		}
	}
}

// recheck makes every lease check its keys at once (the listener subscribed: what was announced before
// was heard by nobody).
func (h *holders) recheck() {
	h.mu.Lock()
	all := map[*Lease]struct{}{}
	for _, set := range h.by {
		for l := range set {
			all[l] = struct{}{}
		}
	}
	h.mu.Unlock()
	for l := range all {
		l.checkSoon("")
	}
}

// gone tells the leases of key that the key was deleted, expired or evicted (event): they check
// it at once.
func (h *holders) gone(key, event string) {
	for _, l := range h.of(key) {
		l.checkSoon(event)
	}
}
