package provider

import (
	"context"
	"sync"
)

// wakeups lets one Provider wake its own waiters: a goroutine queued on a held key registers
// for the key before each attempt, and when this Provider deletes the key (any release, a
// give-back, a force-release) every registration on it is woken at once, ending the backoff wait
// in progress, so the waiter retries immediately. A key released by another process sends no
// wake-up: its waiters keep polling with backoff (or use Options.Waker).
//
// No goroutine is started: a registration is a context derived from the waiter's, and waking it
// is cancelling that context. Registering, narrowing, stopping and waking cost O(1) per
// registration and key under one mutex. The zero value is ready to use.
type wakeups struct {
	mu      sync.Mutex
	waiting map[string]map[*wakeup]struct{} // key (without namespace) → its registrations
}

// wakeup is one registration: its ctx ends when one of its keys is deleted by this Provider,
// when the waiter's context ends, or when the registration is stopped.
type wakeup struct {
	w      *wakeups
	ctx    context.Context
	cancel context.CancelFunc
	keys   []string // guarded by w.mu; nil once stopped
}

// register returns a registration on keys, derived from ctx. It must be made before the attempt
// whose "held" reply it waits on (so a release that follows that reply cannot be missed), and it
// must be stopped on every path.
func (w *wakeups) register(ctx context.Context, keys []string) *wakeup {
	r := &wakeup{w: w, keys: keys}
	r.ctx, r.cancel = context.WithCancel(ctx)
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

// wake ends the wait of every registration on key. It is called only after this Provider
// really deleted key.
func (w *wakeups) wake(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for r := range w.waiting[key] {
		r.cancel() // cheap and non-blocking; the registration leaves when its waiter stops it
	}
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
	r.w.mu.Unlock()
	r.cancel()
}
