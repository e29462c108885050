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
type keyOrder struct {
	mu    sync.Mutex
	lines map[string][]*turn // key → the turns on it, in the order sent
}

// turn is one waiting request's place in the lines of its keys.
type turn struct {
	keys    []string
	ahead   int           // lines in which an earlier turn is first; guarded by keyOrder.mu
	ready   chan struct{} // closed when ahead reaches 0
	waiting bool          // the turn is still in its lines
}

// enter queues a turn for keys behind the connection's earlier waiting requests.
func (o *keyOrder) enter(keys []string) *turn {
	t := &turn{keys: slices.Compact(slices.Sorted(slices.Values(keys))), ready: make(chan struct{}), waiting: true}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.lines == nil {
		o.lines = map[string][]*turn{}
	}
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

// wait returns once t is first in every line, or with ctx's cause when ctx ends first, or
// with errTurnTimedOut after timeout (0: none).
func (o *keyOrder) wait(ctx context.Context, t *turn, timeout time.Duration) error {
	select {
	case <-t.ready:
		return nil
	default:
	}
	var expired <-chan time.Time
	if timeout > 0 {
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		expired = timer.C
	}
	select {
	case <-t.ready:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-expired:
		return errTurnTimedOut
	}
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
