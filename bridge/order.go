package bridge

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// errTurnTimedOut ends a wait for its turn that outlasted the request's timeout.
var errTurnTimedOut = errors.New("bridge: timed out waiting behind an earlier request of this connection")

// keyOrder starts the waiting requests of one connection (a lease, a queued acquire) in the
// order the client sent them, per key: Medusa's callers expect the first of several execute
// calls on one key to win, and each request runs in a goroutine of its own, whose scheduling
// would otherwise decide. The reader takes a turn for a request (enter) before it reads the
// next frame; the request goes to the provider only once every earlier waiting request of the
// connection that shares a key with it has left its turn. A lease (whose owner is its own) leaves
// it once its first attempt was answered (leaver, provider.LeaseOptions.Queued: it holds its
// keys, or waits for them; with the fair queue, in the key's queue): so every lease waits at
// once, the first sent wins a free key and, with the fair queue, they are granted in the order
// sent. A queued acquire leaves its turn only when it is done: it names its owner, and two
// overlapping waits of one owner could re-enter each other's keys. The lines are per key, and a
// request waits only for requests sent before it, so no cycle of waits can form. Requests that
// do not wait (a plain acquire, a release) are not ordered: they answer at once, as stock's do.
//
// A lease_release also orders what comes after it: every later request of the connection that
// names one of the lease's keys (any op, waiting or not) goes to the provider only once that
// release is done (releasing, behind). So a client may send the release of an execute and go on
// at once: its next request on those keys finds them released by this bridge, never held by its
// own earlier lease. A release waits for nothing itself (it only frees keys).
type keyOrder struct {
	mu       sync.Mutex
	lines    map[string][]*turn    // key → the turns on it, in the order sent
	releases map[string][]*barrier // key → the lease_releases in flight on it
}

// barrier is a lease_release in flight: done closes when its release is done.
type barrier struct {
	keys []string
	done chan struct{}
}

// turn is one waiting request's place in the lines of its keys.
type turn struct {
	keys    []string
	ahead   int               // lines in which an earlier turn is first; guarded by keyOrder.mu
	ready   chan struct{}     // closed when ahead reaches 0
	waiting bool              // the turn is still in its lines
	behind  []<-chan struct{} // the lease_releases sent before it on its keys
}

// enter queues a turn for keys behind the connection's earlier waiting requests.
func (o *keyOrder) enter(keys []string) *turn {
	t := &turn{keys: slices.Compact(slices.Sorted(slices.Values(keys))), ready: make(chan struct{}), waiting: true}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.lines == nil {
		o.lines = map[string][]*turn{}
	}
	t.behind = o.behindLocked(t.keys)
	for _, k := range t.keys {
		if len(o.lines[k]) > 0 {
			t.ahead++
		}
		o.lines[k] = append(o.lines[k], t)
	}
	if t.ahead == 0 {
		close(t.ready)
	}
	return t
}

// wait returns once the lease_releases sent before t on its keys are done and t is first in
// every line, or with ctx's cause when ctx ends first, or with errTurnTimedOut after timeout
// (0: none).
func (o *keyOrder) wait(ctx context.Context, t *turn, timeout time.Duration) error {
	return awaitAll(ctx, append(t.behind, t.ready), timeout)
}

// awaitAll returns once every channel of chans is closed, or with ctx's cause when ctx ends
// first, or with errTurnTimedOut after timeout (0: none).
func awaitAll(ctx context.Context, chans []<-chan struct{}, timeout time.Duration) error {
	var expired <-chan time.Time
	for _, ch := range chans {
		select {
		case <-ch:
			continue
		default:
		}
		if expired == nil && timeout > 0 {
			timer := time.NewTimer(timeout)
			defer timer.Stop()
			expired = timer.C
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-expired:
			return errTurnTimedOut
		}
	}
	return nil
}

// releasing records a lease_release of keys in flight; every request entered or checked
// (behind) after it on one of the keys waits until lift.
func (o *keyOrder) releasing(keys []string) *barrier {
	b := &barrier{keys: slices.Compact(slices.Sorted(slices.Values(keys))), done: make(chan struct{})}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.releases == nil {
		o.releases = map[string][]*barrier{}
	}
	for _, k := range b.keys {
		o.releases[k] = append(o.releases[k], b)
	}
	return b
}

// lift ends the barrier b: its release is done.
func (o *keyOrder) lift(b *barrier) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, k := range b.keys {
		line := slices.DeleteFunc(o.releases[k], func(x *barrier) bool { return x == b })
		if len(line) == 0 {
			delete(o.releases, k)
		} else {
			o.releases[k] = line
		}
	}
	close(b.done)
}

// behind returns what a request on keys sent now must wait for: the lease_releases in flight on
// them (nil when none, the common case).
func (o *keyOrder) behind(keys []string) []<-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.behindLocked(keys)
}

func (o *keyOrder) behindLocked(keys []string) []<-chan struct{} {
	if len(o.releases) == 0 {
		return nil
	}
	var chans []<-chan struct{}
	for _, k := range keys {
		for _, b := range o.releases[k] {
			if !slices.Contains(chans, b.done) {
				chans = append(chans, b.done)
			}
		}
	}
	return chans
}

// leaver returns the provider's Queued callback for t: it leaves t once its first attempt was
// answered. Nil for a request that has no turn.
func (o *keyOrder) leaver(t *turn) func() {
	if t == nil {
		return nil
	}
	return func() { o.leave(t) }
}

// leave takes t out of its lines and lets the next turns on them go. It is idempotent.
func (o *keyOrder) leave(t *turn) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !t.waiting {
		return
	}
	t.waiting = false
	for _, k := range t.keys {
		line := o.lines[k]
		i := slices.Index(line, t)
		line = slices.Delete(line, i, i+1)
		if len(line) == 0 {
			delete(o.lines, k)
			continue
		}
		o.lines[k] = line
		if i == 0 {
			next := line[0]
			if next.ahead--; next.ahead == 0 {
				close(next.ready)
			}
		}
	}
}
