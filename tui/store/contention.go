package store

import (
	"time"

	"github.com/locktui/locktui/provider"
)

// Contention windows.
const (
	// HistorySeconds is the length of the per-key contention history (one bucket a second).
	HistorySeconds = 60
	// RateWindow is the window over which per-second rates are averaged.
	RateWindow = 10 * time.Second
	// WaiterTimeout forgets a waiter that never reported acquired or gave_up (a lost event).
	WaiterTimeout = 2 * time.Minute
)

// Event is one lock event as published by the Go provider, the bridge or the CLI: the
// provider's own event type (events.Event is its wire form), of which the store reads Kind, Key,
// Owner and Time.
type Event = provider.Event

// Contention is a key's contention at the time a View was built.
type Contention struct {
	// Waiters is the number of owners waiting for the key now.
	Waiters int
	// AttemptsPerSec is the rate of finished acquisition attempts (acquired or gave up) over
	// RateWindow.
	AttemptsPerSec float64
	// ContendedPerSec is the rate of contended attempts (waiting, gave up, lost) and owner
	// hand-offs over RateWindow.
	ContendedPerSec float64
	// Contended is the number of contended attempts and hand-offs in the last HistorySeconds.
	Contended int
	// Handoffs is the number of owner changes seen by polling or sampling in the last
	// HistorySeconds.
	Handoffs int
	// History is contended attempts per second over the last HistorySeconds, oldest first.
	History []int
}

// Score orders keys in the hot ranking: contended attempts in the last minute.
func (c *Contention) Score() int {
	if c == nil {
		return 0
	}
	return c.Contended
}

// ring counts events per second over the last HistorySeconds.
type ring struct {
	buckets [HistorySeconds]uint32
	sec     int64 // unix second of the newest bucket
}

func (r *ring) advance(sec int64) {
	if sec <= r.sec {
		return
	}
	gap := sec - r.sec
	if gap >= HistorySeconds || r.sec == 0 {
		r.buckets = [HistorySeconds]uint32{}
	} else {
		for s := r.sec + 1; s <= sec; s++ {
			r.buckets[s%HistorySeconds] = 0
		}
	}
	r.sec = sec
}

func (r *ring) add(t time.Time, n uint32) {
	sec := t.Unix()
	r.advance(sec)
	if r.sec-sec >= HistorySeconds {
		return // older than the history
	}
	r.buckets[sec%HistorySeconds] += n
}

// sum counts the events of the last `seconds` seconds up to now (the current second included).
func (r *ring) sum(now time.Time, seconds int) int {
	r.advance(now.Unix())
	total := 0
	for i := 0; i < seconds && i < HistorySeconds; i++ {
		total += int(r.buckets[(r.sec-int64(i))%HistorySeconds])
	}
	return total
}

func (r *ring) series(now time.Time) []int {
	r.advance(now.Unix())
	out := make([]int, HistorySeconds)
	for i := range out {
		out[i] = int(r.buckets[(r.sec-int64(HistorySeconds-1-i))%HistorySeconds])
	}
	return out
}

// keyStats is the contention record of one key.
type keyStats struct {
	waiters   map[string]time.Time // owner → waiting since
	attempts  ring
	contended ring
	handoffs  ring
	last      time.Time
}

// tracker counts contention per key.
type tracker struct {
	keys map[string]*keyStats
}

func (t *tracker) stats(key string, at time.Time) *keyStats {
	if t.keys == nil {
		t.keys = map[string]*keyStats{}
	}
	ks := t.keys[key]
	if ks == nil {
		ks = &keyStats{}
		t.keys[key] = ks
	}
	if at.After(ks.last) {
		ks.last = at
	}
	return ks
}

func (t *tracker) event(e Event) {
	ks := t.stats(e.Key, e.Time)
	switch e.Kind {
	case provider.EventWaiting:
		if ks.waiters == nil {
			ks.waiters = map[string]time.Time{}
		}
		ks.waiters[e.Owner] = e.Time
		ks.contended.add(e.Time, 1)
	case provider.EventAcquired:
		delete(ks.waiters, e.Owner)
		ks.attempts.add(e.Time, 1)
	case provider.EventGaveUp:
		delete(ks.waiters, e.Owner)
		ks.attempts.add(e.Time, 1)
		ks.contended.add(e.Time, 1)
	case provider.EventLost:
		ks.contended.add(e.Time, 1)
	}
}

func (t *tracker) handoff(key string, at time.Time) {
	ks := t.stats(key, at)
	ks.handoffs.add(at, 1)
	ks.contended.add(at, 1)
}

// snapshot returns the key's contention at now, or nil when there was none lately.
func (t *tracker) snapshot(key string, now time.Time) *Contention {
	ks := t.keys[key]
	if ks == nil {
		return nil
	}
	return ks.snapshot(now)
}

func (ks *keyStats) snapshot(now time.Time) *Contention {
	for owner, since := range ks.waiters {
		if now.Sub(since) > WaiterTimeout {
			delete(ks.waiters, owner)
		}
	}
	window := int(RateWindow / time.Second)
	c := &Contention{
		Waiters:         len(ks.waiters),
		AttemptsPerSec:  float64(ks.attempts.sum(now, window)) / float64(window),
		ContendedPerSec: float64(ks.contended.sum(now, window)) / float64(window),
		Contended:       ks.contended.sum(now, HistorySeconds),
		Handoffs:        ks.handoffs.sum(now, HistorySeconds),
	}
	if c.Waiters == 0 && c.Contended == 0 && ks.attempts.sum(now, HistorySeconds) == 0 {
		return nil
	}
	c.History = ks.contended.series(now)
	return c
}

// prune forgets keys without activity or waiters for longer than the history.
func (t *tracker) prune(now time.Time) {
	for key, ks := range t.keys {
		if len(ks.waiters) == 0 && now.Sub(ks.last) > HistorySeconds*time.Second {
			delete(t.keys, key)
		}
	}
}
