package source

import (
	"context"
	"sync"
	"time"

	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/tui/store"
)

// Hub pacing: the rules of its build job (Hub.Builds).
const (
	// hubTick is the least wait between two builds for new data.
	hubTick = 100 * time.Millisecond
	// hubPeriod is the longest a View goes without a rebuild, so GONE rows leave and the order
	// follows the countdown.
	hubPeriod = time.Second
	// hubMaxGap caps the wait between rebuilds for new data on a large store.
	hubMaxGap = 2 * time.Second
	// hubMaxExpired bounds the keys waiting to be read again after their countdown reached
	// zero; the store hands out the rest once there is room.
	hubMaxExpired = keyspaceMaxPending
)

// Hub owns the store: the readers and the lock events apply what they learn to it, and its
// build job (Builds) filters and sorts every lock for the current query off the UI goroutine,
// at most every max(100 ms, 10 × the last build time) for new data (so building never takes
// more than a tenth of a core), at once for a new query, and at least every second. Views are
// immutable snapshots; they come out through Next, latest first: a slow reader only misses
// stale ones.
type Hub struct {
	builds *Job
	out    chan *store.View

	// qmu guards query alone, so that SetQuery never waits for a build.
	qmu   sync.Mutex
	query store.Query

	mu sync.Mutex
	s  *store.Store
	// lastBuild and lastTook are the last build's start and duration.
	lastBuild time.Time
	lastTook  time.Duration
	// expiryDue is when a countdown next reaches zero; changed says the store changed since
	// the keys at zero were last asked for.
	expiryDue time.Time
	changed   bool
	// expired are the keys whose countdown reached zero without news, to be read again
	// (takeExpired); onExpired says some arrived.
	expired   map[string]struct{}
	onExpired func()

	now func() time.Time
}

// NewHub returns a Hub; its Builds job runs in a Scheduler (NewWatcher adds it to the
// Watcher's).
func NewHub() *Hub {
	h := &Hub{
		out:     make(chan *store.View, 1),
		s:       store.New(),
		expired: map[string]struct{}{},
		now:     time.Now,
	}
	h.builds = &Job{Name: "build", Run: h.build, Every: h.buildEvery, Gap: h.buildGap}
	return h
}

// Builds returns the job that builds the Views; it is triggered by every change of the store
// and urged by a new query.
func (h *Hub) Builds() *Job { return h.builds }

// Observe applies locks read at `at` (see Sink).
func (h *Hub) Observe(locks []operator.Lock, at time.Time, scan uint64) {
	h.apply(func(s *store.Store) { s.Observe(locks, at, scan) })
}

// EndScan applies the end of a full scan (see Sink).
func (h *Hub) EndScan(scan uint64, started time.Time) {
	h.apply(func(s *store.Store) { s.EndScan(scan, started, h.now()) })
}

// Absent applies keys found missing (see Sink).
func (h *Hub) Absent(keys []string, at time.Time) {
	h.apply(func(s *store.Store) { s.Absent(keys, at) })
}

// Event applies a lock event.
func (h *Hub) Event(e store.Event) { h.apply(func(s *store.Store) { s.Event(e) }) }

// apply changes the store with f and triggers a build.
func (h *Hub) apply(f func(s *store.Store)) {
	h.mu.Lock()
	f(h.s)
	h.changed = true
	h.mu.Unlock()
	h.builds.Trigger()
}

// SetQuery asks for a View built for q at once. It never blocks: only the latest query counts.
func (h *Hub) SetQuery(q store.Query) {
	h.qmu.Lock()
	h.query = q
	h.qmu.Unlock()
	h.builds.Urge()
}

// Next waits for the next View, or returns false when ctx ends.
func (h *Hub) Next(ctx context.Context) (*store.View, bool) {
	select {
	case v := <-h.out:
		return v, true
	case <-ctx.Done():
		return nil, false
	}
}

// build is a round of the build job: it queues the keys whose countdown reached zero, drops
// what is gone and builds the View for the current query.
func (h *Hub) build(context.Context) error {
	h.qmu.Lock()
	q := h.query
	h.qmu.Unlock()
	h.mu.Lock()
	now := h.now()
	queued := false
	if h.changed || !h.expiryDue.IsZero() && !now.Before(h.expiryDue) {
		queued = h.queueExpired(now)
		h.changed = false
	}
	h.s.Prune(now)
	v := h.s.Build(q, now)
	h.lastBuild, h.lastTook = now, v.Took
	onExpired := h.onExpired
	h.mu.Unlock()
	if queued && onExpired != nil {
		onExpired()
	}
	select {
	case <-h.out: // drop the unread, older View
	default:
	}
	h.out <- v
	return nil
}

// buildGap is the least wait between two builds for new data: ten times the last build's
// time, within hubTick and hubMaxGap.
func (h *Hub) buildGap() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return min(max(hubTick, 10*h.lastTook), hubMaxGap)
}

// buildEvery is the wait between two builds without news: hubPeriod (longer when the gap is),
// shorter when a countdown reaches zero before.
func (h *Hub) buildEvery() time.Duration {
	gap := h.buildGap()
	h.mu.Lock()
	defer h.mu.Unlock()
	every := max(hubPeriod, gap)
	if !h.expiryDue.IsZero() {
		every = min(every, max(h.expiryDue.Sub(h.lastBuild), gap))
	}
	return every
}

// queueExpired asks the store for the keys whose countdown reached zero at now, as many as
// there is room for, notes when to ask again, and reports whether it queued any. h.mu is held.
func (h *Hub) queueExpired(now time.Time) bool {
	keys, next := h.s.Expired(now, hubMaxExpired-len(h.expired))
	for _, key := range keys {
		h.expired[key] = struct{}{}
	}
	h.expiryDue = next
	return len(keys) > 0
}

// takeExpired returns up to max of the keys whose countdown reached zero without news (the
// store's Expired). The reread job reads them again, so a lost expiry notification does not
// leave a row at 0.
func (h *Hub) takeExpired(max int) (keys []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for key := range h.expired {
		if len(keys) == max {
			break
		}
		keys = append(keys, key)
		delete(h.expired, key)
	}
	return keys
}

// expiredLeft reports whether keys at zero wait to be taken.
func (h *Hub) expiredLeft() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.expired) > 0
}

// notifyExpired sets what the hub calls when it queued keys at zero.
func (h *Hub) notifyExpired(f func()) {
	h.mu.Lock()
	h.onExpired = f
	h.mu.Unlock()
}
