package provider

import (
	"context"
	"sync"
	"time"
)

// wakeups are the waiters of one Provider, by key: a call queued on a held key registers for
// the key before each attempt, and a registration is woken, ending the backoff wait in
// progress so that the waiter retries immediately, when the key is freed: by this Provider
// (any release, a give-back, a force-release: wake, at once) or by anyone (the wake-up
// listener: wakeHead, see listen.go). One freed key wakes one waiter of this Provider, not all
// of them (the others would only find the key held again, and their attempts would slow down
// the hand-off): the fair-queue head the message names when it is one of ours, else the call
// that has waited longest. A waiter that loses the race for the key waits again, and the next
// release wakes the next one; a wake-up that is lost costs one backoff sleep.
//
// A key this Provider freed itself is handed to the waiter it woke (handoff.go): the other
// calls that wait, newcomers included, leave it to that waiter until its attempt. Without it, a
// holder that releases and at once calls for the key again (a loop, a bridge client that does
// not await its release) would take it back before the woken waiter's attempt, every time.
//
// No goroutine is started (a hand-off's timer runs a function only when it lapses): a
// registration is a mark in these maps, and waking it sets its woken flag and cancels its
// context, which is derived from the waiter's only when the waiter actually sleeps
// (waitContext): most attempts find their keys free and never need one. Registering, narrowing,
// stopping and waking cost O(1) per registration and key under one mutex. The zero value is
// ready to use.
type wakeups struct {
	mu      sync.Mutex
	waiting map[string]map[*wakeup]struct{} // key (without namespace) → its registrations
	// deleting counts this Provider's deletes in flight by key; a wake-up the listener hears
	// for such a key waits in held until the delete has told the Observer (see hold).
	deleting map[string]int
	held     map[string][]string // key → queue heads heard while deleting
	handed   map[string]*handOff // key → the call it was handed to (handoff.go)
}

// hold marks keys as being deleted by this Provider: until unhold, wake-ups heard for them are
// kept back, so that the Observer always learns of the release before the acquisition it let
// in (the script announces the free key before its reply arrives here).
func (w *wakeups) hold(keys []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.deleting == nil {
		w.deleting, w.held = map[string]int{}, map[string][]string{}
	}
	for _, k := range keys {
		w.deleting[k]++
	}
}

// unhold ends hold and delivers the wake-ups kept back meanwhile; freed[i] tells whether the
// delete really deleted keys[i] (and so woke a waiter of its own).
func (w *wakeups) unhold(keys []string, freed []bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, k := range keys {
		if w.deleting[k]--; w.deleting[k] > 0 {
			continue
		}
		delete(w.deleting, k)
		for _, head := range w.held[k] {
			// A message naming no queue head is, as a rule, this very delete's own
			// announcement, whose waiter wake already woke: a second waiter would only find
			// the key taken. (Another process's delete in the same instant is then found by
			// polling.) A named head is delivered.
			if head != "" || !freed[i] {
				w.wakeHeadLocked(k, head)
			}
		}
		delete(w.held, k)
	}
}

// waitMarkTTL is the life of the contention marker that a waiting call's attempt sets on a key
// it did not take (lib.lua, markWaiting): the scripts that free a key announce it on FreeChannel
// only while the marker lives, so a release nobody waits for costs no PUBLISH. Each attempt
// leaves the marker at least half of this to live, and the next attempt follows within
// MaximumRetryInterval (the longest backoff sleep) plus its round trip, so a sleeping waiter is
// always marked: 2 × MaximumRetryInterval + 2 s (4 s by default). A marker that lapses all the
// same (a round trip slower than a second) costs that waiter one backoff sleep, as a lost
// message does.
func (p *Provider) waitMarkTTL() time.Duration { return 2*p.opts.MaximumRetryInterval + 2*time.Second }

// wakeup is one registration: it is woken when one of its keys is deleted by this Provider;
// its context (waitContext) ends then, when the waiter's context ends, or when the
// registration is stopped.
type wakeup struct {
	w      *wakeups
	parent context.Context    // the waiter's
	ctx    context.Context    // guarded by w.mu; nil until waitContext
	cancel context.CancelFunc // guarded by w.mu; with ctx
	woken  bool               // guarded by w.mu
	keys   []string           // guarded by w.mu; nil once stopped
	ticket string             // the waiter's fair-queue ticket; "" when it does not queue
	call   string             // the waiting call's claim: who a key is handed to
	since  time.Time          // when the waiting call started
}

// register returns a registration on keys for a waiter whose context is ctx. It must be made before the attempt
// whose "held" reply it waits on (so a release that follows that reply cannot be missed), and it
// must be stopped on every path.
func (w *wakeups) register(ctx context.Context, keys []string, call, ticket string, since time.Time) *wakeup {
	r := &wakeup{w: w, parent: ctx, keys: keys, call: call, ticket: ticket, since: since}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.waiting == nil {
		w.waiting = map[string]map[*wakeup]struct{}{}
	}
	for _, key := range keys {
		set := w.waiting[key]
		if set == nil {
			set = map[*wakeup]struct{}{}
			w.waiting[key] = set
		}
		set[r] = struct{}{}
	}
	return r
}

// wake ends the wait of the longest-waiting registration on key that does not queue (a queued
// one is woken by the listener, when it is the head), and hands it the key (see handOff). It is
// called only after this Provider really deleted key.
func (w *wakeups) wake(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.handLocked(key, "")
}

// everyone, as a queue head kept back by hold, stands for wakeAll: every registration on the key.
const everyone = "\x00everyone"

// wakeAll ends the wait of every registration: the listener calls it when Redis confirms its
// subscription, since a key freed before that was announced to nobody (each waiter retries
// once and, finding the key held, sleeps again). Keys being deleted by this Provider are woken
// at unhold, as wakeHead's are.
func (w *wakeups) wakeAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for key, set := range w.waiting {
		if w.deleting[key] > 0 {
			w.held[key] = append(w.held[key], everyone)
			continue
		}
		w.wakeEveryLocked(set)
	}
}

// wakeEveryLocked wakes every registration of set (one key's). w.mu is held.
func (w *wakeups) wakeEveryLocked(set map[*wakeup]struct{}) {
	for r := range set {
		r.wakeLocked()
	}
}

// wakeHead ends the wait of the registration on key whose ticket is head, the queue head the
// message names; when none of ours is, of the longest-waiting registration (with head "",
// nobody queues or the freeing is not ours to know about, a keyspace notification; otherwise
// among those that do not queue).
func (w *wakeups) wakeHead(key, head string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.deleting[key] > 0 {
		w.held[key] = append(w.held[key], head)
		return
	}
	w.wakeHeadLocked(key, head)
}

// wakeHeadLocked is wakeHead with w.mu held.
func (w *wakeups) wakeHeadLocked(key, head string) {
	if head == everyone {
		w.wakeEveryLocked(w.waiting[key])
		return
	}
	if head != "" {
		for r := range w.waiting[key] {
			if r.ticket == head {
				r.wakeLocked()
				return
			}
		}
	}
	queued := head == ""
	if r := w.oldestLocked(key, func(r *wakeup) bool { return !r.woken && (queued || r.ticket == "") }); r != nil {
		r.wakeLocked()
	}
}

// oldestLocked returns the registration on key whose call has waited longest, among those still
// waiting (their context live) that take accepts, or nil. w.mu is held.
func (w *wakeups) oldestLocked(key string, take func(*wakeup) bool) *wakeup {
	var oldest *wakeup
	for r := range w.waiting[key] {
		if r.parent.Err() == nil && take(r) && (oldest == nil || r.since.Before(oldest.since)) {
			oldest = r
		}
	}
	return oldest
}

// unlinkLocked removes r from key's set, dropping the set once empty. w.mu is held.
func (w *wakeups) unlinkLocked(key string, r *wakeup) {
	set := w.waiting[key]
	delete(set, r)
	if len(set) == 0 {
		delete(w.waiting, key)
	}
}

// narrow keeps only key (one of r's keys) registered, so releases of the others, e.g. the keys
// the waiter itself gives back, no longer wake it. A wake-up that already happened stays.
func (r *wakeup) narrow(key string) {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	var kept []string
	for i, k := range r.keys {
		if k == key {
			kept = r.keys[i : i+1] // a sub-slice: the caller's keys stay intact
			continue
		}
		r.w.unlinkLocked(k, r)
	}
	r.keys = kept
}

// stop unregisters r and releases its context. It is idempotent and nil-safe.
func (r *wakeup) stop() {
	if r == nil {
		return
	}
	r.w.mu.Lock()
	for _, key := range r.keys {
		r.w.unlinkLocked(key, r)
	}
	r.keys = nil
	r.woken = true // a later waitContext does not sleep
	cancel := r.cancel
	r.w.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// wakeLocked wakes r: its context, if made yet, ends. w.mu is held.
func (r *wakeup) wakeLocked() {
	r.woken = true
	if r.cancel != nil {
		r.cancel()
	}
}

// waitContext returns the context of a sleep between attempts: derived from the waiter's, and
// ended when r is woken (already, when it was woken before) or stopped.
func (r *wakeup) waitContext() context.Context {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	if r.ctx == nil {
		r.ctx, r.cancel = context.WithCancel(r.parent)
		if r.woken {
			r.cancel()
		}
	}
	return r.ctx
}
