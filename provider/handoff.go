package provider

import (
	"context"
	"time"
)

// handOffLimit bounds how long the other waiters leave a freed key to the call it was handed to:
// a call whose goroutine is slow to run, or that no longer tries the key, delays them by this
// much at most.
const handOffLimit = 50 * time.Millisecond

// handOff is a key this Provider freed and handed to the waiting call it woke (wakeups.wake):
// until that call's next attempt on the key is answered, the call ends, or handOffLimit passes,
// the other calls of this Provider that wait count the key as held (handedAway) and sleep. If
// the call ends or does not try in time, the next waiter is woken and handed the key in turn,
// so a deferred call never sleeps a whole backoff beside a free key.
type handOff struct {
	to    string          // the call's claim
	ctx   context.Context // the call's
	at    time.Time       // when the key was handed
	timer *time.Timer     // hands the key on when handOffLimit passes first
}

// handLocked hands key to the longest-waiting call registered on it that does not queue and is
// not the call except, and wakes it; w.mu is held. A registration already woken (by another
// key, or by the listener's first subscription) counts: its call is about to try again.
func (w *wakeups) handLocked(key, except string) {
	if h := w.handed[key]; h != nil {
		h.timer.Stop()
		delete(w.handed, key)
	}
	r := w.oldestLocked(key, func(c *wakeup) bool { return c.ticket == "" && c.call != except })
	if r == nil {
		return
	}
	r.wakeLocked() // cheap and non-blocking; the registration leaves when its waiter stops it
	if w.handed == nil {
		w.handed = map[string]*handOff{}
	}
	h := &handOff{to: r.call, ctx: r.parent, at: time.Now()}
	h.timer = time.AfterFunc(handOffLimit, func() { w.lapse(key, h) })
	w.handed[key] = h
}

// lapse hands key on when its hand-off h was not taken up in time.
func (w *wakeups) lapse(key string, h *handOff) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.handed[key] == h {
		w.handLocked(key, h.to)
	}
}

// handedAway returns the index of the first of keys that is handed to another call than the
// one whose claim is call, or -1.
func (w *wakeups) handedAway(call string, keys []string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.handed) == 0 {
		return -1
	}
	for i, k := range keys {
		h := w.handed[k]
		switch {
		case h == nil:
		case h.ctx.Err() != nil: // the call ended without saying so yet
			w.handLocked(k, h.to)
			if h2 := w.handed[k]; h2 != nil && h2.to != call {
				return i
			}
		case h.to != call:
			return i
		}
	}
	return -1
}

// attempted ends the hand-offs to the call whose claim is call of keys: its attempt on them,
// sent at sent, was answered (res[i], unless errs[i]) or failed, or the call ended (res nil).
// The key of a call that ended is handed to the next waiter. One its attempt found held stays
// with whoever holds it (handing it on would only wake waiters to find it held), unless the
// attempt was sent before the key was handed (it raced the release, woken by something else):
// the call is then woken to try again.
func (w *wakeups) attempted(call string, keys []string, sent time.Time, res []int64, errs []error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.handed) == 0 {
		return
	}
	for i, k := range keys {
		h := w.handed[k]
		if h == nil || h.to != call {
			continue
		}
		switch {
		case res == nil: // the call ended: the key is still free
			w.handLocked(k, call)
		case i < len(res) && errs[i] == nil && isHeld(res[i]) && sent.Before(h.at):
			for r := range w.waiting[k] {
				if r.call == call {
					r.wakeLocked()
				}
			}
		default: // taken by the call, or by another in the meantime (or Redis failed): done
			h.timer.Stop()
			delete(w.handed, k)
		}
	}
}
