package provider

import (
	"sync"
	"time"

	"github.com/locktui/locktui/internal/lockwire"
)

// Stock's turns. Our clients hand a contended lock on within a round trip (a wake-up, then one
// attempt), while stock Medusa polls with a backoff that grows to a second: beside our
// clients, a stock process would hardly ever find the lock free, and sustained contention on
// one key would starve it. So while processes that write no holder record contend for a lock,
// our clients share it with them in turns, kept in the lock's share record (lib.lua):
//
//   - One of ours finding the lock held by such a process (no holder record, or one of
//     another owner) creates or refreshes the record, which then lives shareMemory.
//   - While the record lives, the first acquisition of ours of the free lock starts our run;
//     the delete of ours that frees the lock shareRun or more after that leaves the lock free
//     for the others for shareWindow: our acquisitions find it "left to others" (a negative
//     acquire.lua status, counted as held) and wait until the window ends, when the first of
//     them that tries takes it if nobody else did.
//   - A stock process that takes it keeps it for as long as its own callers re-take it; our
//     waiters find it held and poll as stock does, until its run has lasted shareRun as ours
//     saw it: then one waiter per Provider polls every sharePoll (fastPollers) to find the key
//     free between a stock worker's release and its re-take, and starts a new run of ours.
//
// Without stock processes the record never exists and nothing changes (a few reads of the
// missing record inside the scripts: HGET on a free key, EXISTS on a take, no round trip).
// The window is what a stock poller needs to find the lock free: a stock worker under
// contention polls every 0.5–1 s, so eight of them arrive within 150 ms in about four windows
// out of five. The values are internal/lockwire's, which hands them to the scripts too.
const (
	shareRun    = lockwire.ShareRun
	shareWindow = lockwire.ShareWindow
	shareMemory = lockwire.ShareMemory
)

// isHeld tells whether an acquire.lua status leaves the key to someone else: held (also past
// the holder's turn), or free but left to others for now.
func isHeld(status int64) bool { return status <= acquireHeld || status == acquireOverdue }

// sharePoll is how often the one waiter per Provider and key that polls fast (fastPollers)
// tries a key whose stock holder's turn is over: a stock worker re-takes the key within its
// own event loop, so only an attempt that lands between its release and its re-take gets in.
const sharePoll = 5 * time.Millisecond

// fastPollers picks, per key, the one waiting call of a Provider that polls every sharePoll
// while a stock holder's turn is over; the others keep their backoff (and are woken when ours
// releases). So a Provider adds at most 1/sharePoll attempts per second per such key, whatever
// the number of its waiters. The zero value is ready to use.
type fastPollers struct {
	mu sync.Mutex
	by map[string]*queue // key (without namespace) → the call that polls it fast
}

// claim makes q the fast poller of key unless another call is; it reports whether q is.
func (f *fastPollers) claim(key string, q *queue) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.by == nil {
		f.by = map[string]*queue{}
	}
	cur, ok := f.by[key]
	if !ok {
		f.by[key], cur = q, q
	}
	return cur == q
}

// drop ends q's claim on key, if it has it.
func (f *fastPollers) drop(key string, q *queue) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.by[key] == q {
		delete(f.by, key)
	}
}

// contentionKeys is the most keys a contention remembers.
const contentionKeys = 4096

// contention remembers the keys a Provider's attempts found held within shareMemory. Only
// attempts on those keys read the share record (acquire.lua's ARGV[8]): stock's turns, and our
// runs, are kept where contention was seen, and the uncontended path reads nothing beside the
// lock. A Provider that has never seen a key held takes it when it is free, as a try-once
// acquisition does, also in another's turn. The zero value is ready to use.
type contention struct {
	mu   sync.Mutex
	seen map[string]time.Time // key (without namespace) → when an attempt last found it held
}

// note remembers that an attempt found key held at now. When contentionKeys keys are
// remembered, the stale ones are forgotten, and all of them if none is.
func (c *contention) note(key string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[string]time.Time{}
	}
	if _, ok := c.seen[key]; !ok && len(c.seen) >= contentionKeys {
		for k, at := range c.seen {
			if now.Sub(at) >= shareMemory {
				delete(c.seen, k)
			}
		}
		if len(c.seen) >= contentionKeys {
			clear(c.seen)
		}
	}
	c.seen[key] = now
}

// recent tells whether an attempt found key held within shareMemory before now.
func (c *contention) recent(key string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.seen[key]
	return ok && now.Sub(at) < shareMemory
}
