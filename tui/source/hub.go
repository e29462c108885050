package source

import (
	"context"
	"sync"
	"time"

	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/tui/store"
)

// Hub pacing.
const (
	// hubTick is how often the hub considers a rebuild.
	hubTick = 100 * time.Millisecond
	// hubPeriod is the longest a View goes without a rebuild while anything is on screen, so
	// GONE rows leave and the order follows the countdown.
	hubPeriod = time.Second
	// hubMaxGap caps the wait between rebuilds for new data on a large store.
	hubMaxGap = 2 * time.Second
	// hubInput is the capacity of the input queue.
	hubInput = 4096
	// hubMaxExpired bounds the keys waiting to be read again after their countdown reached
	// zero; the store hands out the rest once there is room.
	hubMaxExpired = keyspaceMaxPending
)

type inputKind int

const (
	inObserve inputKind = iota
	inEndScan
	inAbsent
	inEvent
)

type input struct {
	kind  inputKind
	locks []operator.Lock
	keys  []string
	at    time.Time
	scan  uint64
	event store.Event
}

// Hub is the one goroutine that owns the store: it applies observations and events, and after
// changes rebuilds the View for the current query (filter and sort of every lock, off the UI
// goroutine), at most every max(100 ms, 10 × the last build time) for new data, so building
// never takes more than a tenth of a core, and at once for a new query. Views come out through
// Next, latest first: a slow reader only misses stale ones.
type Hub struct {
	in  chan input
	out chan *store.View

	mu        sync.Mutex
	query     store.Query
	queryWake chan struct{}
	// expired are the keys whose countdown reached zero without news, to be read again
	// (NextExpired); expiredWake says some arrived.
	expired     map[string]struct{}
	expiredWake chan struct{}

	done chan struct{}
	now  func() time.Time
}

// NewHub returns a Hub; start it with Run.
func NewHub() *Hub {
	return &Hub{
		in:          make(chan input, hubInput),
		out:         make(chan *store.View, 1),
		queryWake:   make(chan struct{}, 1),
		expired:     map[string]struct{}{},
		expiredWake: make(chan struct{}, 1),
		done:        make(chan struct{}),
		now:         time.Now,
	}
}

// Observe queues locks read at `at` (see Sink).
func (h *Hub) Observe(locks []operator.Lock, at time.Time, scan uint64) {
	h.send(input{kind: inObserve, locks: locks, at: at, scan: scan})
}

// EndScan queues the end of a full scan (see Sink).
func (h *Hub) EndScan(scan uint64, started time.Time) {
	h.send(input{kind: inEndScan, scan: scan, at: started})
}

// Absent queues keys found missing (see Sink).
func (h *Hub) Absent(keys []string, at time.Time) {
	h.send(input{kind: inAbsent, keys: keys, at: at})
}

// Event queues a lock event.
func (h *Hub) Event(e store.Event) { h.send(input{kind: inEvent, event: e}) }

// send blocks while the queue is full (back-pressure on the readers) unless the hub stopped.
func (h *Hub) send(in input) {
	select {
	case h.in <- in:
	case <-h.done:
	}
}

// SetQuery asks for a View built for q. It never blocks: only the latest query counts.
func (h *Hub) SetQuery(q store.Query) {
	h.mu.Lock()
	h.query = q
	h.mu.Unlock()
	select {
	case h.queryWake <- struct{}{}:
	default:
	}
}

// Next waits for the next View or the end of ctx or of the hub.
func (h *Hub) Next(ctx context.Context) (*store.View, bool) {
	select {
	case v := <-h.out:
		return v, true
	case <-ctx.Done():
		return nil, false
	case <-h.done:
		return nil, false
	}
}

// NextExpired waits until some keys' countdown reached zero without news (the store's
// Expired) and returns up to max of them, or false when ctx or the hub ended. The caller reads
// them again (see Source.RereadExpired), so a lost expiry notification does not leave a row at 0.
func (h *Hub) NextExpired(ctx context.Context, max int) ([]string, bool) {
	for {
		h.mu.Lock()
		var keys []string
		for key := range h.expired {
			if len(keys) == max {
				break
			}
			keys = append(keys, key)
			delete(h.expired, key)
		}
		h.mu.Unlock()
		if len(keys) > 0 {
			return keys, true
		}
		select {
		case <-ctx.Done():
			return nil, false
		case <-h.done:
			return nil, false
		case <-h.expiredWake:
		}
	}
}

// queueExpired asks the store for the keys whose countdown reached zero at now, as many as
// there is room for, and returns when to ask again (zero: after the next change).
func (h *Hub) queueExpired(s *store.Store, now time.Time) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	keys, next := s.Expired(now, hubMaxExpired-len(h.expired))
	for _, key := range keys {
		h.expired[key] = struct{}{}
	}
	if len(keys) > 0 {
		select {
		case h.expiredWake <- struct{}{}:
		default:
		}
	}
	return next
}

// Done is closed when Run returned.
func (h *Hub) Done() <-chan struct{} { return h.done }

// Run applies inputs and builds Views until ctx ends.
func (h *Hub) Run(ctx context.Context) {
	defer close(h.done)
	s := store.New()
	tick := time.NewTicker(hubTick)
	defer tick.Stop()
	var (
		dirty, urgent bool
		lastBuild     time.Time
		lastTook      time.Duration
		query         store.Query
		// expiryDue is when a countdown next reaches zero; changed says the store changed
		// since the keys at zero were last asked for.
		expiryDue time.Time
		changed   bool
	)
	for {
		select {
		case <-ctx.Done():
			return
		case in := <-h.in:
			h.apply(s, in)
		drain: // a burst is applied whole before a build
			for i := 0; i < hubInput; i++ {
				select {
				case in := <-h.in:
					h.apply(s, in)
				default:
					break drain
				}
			}
			dirty, changed = true, true
		case <-h.queryWake:
			h.mu.Lock()
			query = h.query
			h.mu.Unlock()
			urgent = true
		case <-tick.C:
		}
		now := h.now()
		if changed || !expiryDue.IsZero() && !now.Before(expiryDue) {
			expiryDue, changed = h.queueExpired(s, now), false
		}
		gap := min(max(hubTick, 10*lastTook), hubMaxGap)
		since := now.Sub(lastBuild)
		if !urgent && !(dirty && since >= gap) && since < max(hubPeriod, gap) {
			continue
		}
		s.Prune(now)
		v := s.Build(query, now)
		lastBuild, lastTook, dirty, urgent = now, v.Took, false, false
		select {
		case <-h.out: // drop the unread, older View
		default:
		}
		h.out <- v
	}
}

func (h *Hub) apply(s *store.Store, in input) {
	switch in.kind {
	case inObserve:
		s.Observe(in.locks, in.at, in.scan)
	case inEndScan:
		s.EndScan(in.scan, in.at, h.now())
	case inAbsent:
		s.Absent(in.keys, in.at)
	case inEvent:
		s.Event(in.event)
	}
}
