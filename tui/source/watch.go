package source

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locktui/locktui/events"
	"github.com/locktui/locktui/internal/sleep"
)

// HeartbeatEvery is the PING interval while Redis answers.
const HeartbeatEvery = time.Second

// watchUpdates is the capacity of the queue of Updates: the program reads them at once, so
// the queue only absorbs a burst; the feeds wait while it is full.
const watchUpdates = 64

// WatchOptions configure a Watcher. The zero value polls every second without lock events.
type WatchOptions struct {
	// Refresh is the poll interval without keyspace notifications. Default 1 s; it grows by
	// itself when a refresh takes longer within the budget.
	Refresh time.Duration
	// KeyspacePoll is the shortest interval between two full refreshes while keyspace
	// notifications keep the table live (see DriftInterval). Default 5 min.
	KeyspacePoll time.Duration
	// Events subscribes to the namespace's lock events (for contention) and forwards them to
	// the hub.
	Events bool
}

// Feed is the state of a subscription: live, being made, or failed (Err) and waiting for its
// retry.
type Feed struct {
	On, Pending bool
	Err         error
}

// Conn is what the console knows about the connection.
type Conn struct {
	// Info is the server's, read once per connection (InfoOK once read).
	Info   ServerInfo
	InfoOK bool
	// Latency is the last PING's round trip.
	Latency time.Duration
	// Down is true while Redis does not answer; Err says why, RetryAt when the heartbeat
	// tries again.
	Down    bool
	Err     error
	RetryAt time.Time
}

// Status is a snapshot of what the Watcher's feeds know, handed to the program on every change.
type Status struct {
	Conn     Conn
	Keyspace Feed
	Events   Feed
	// Scanning is true while a full refresh runs; Refreshes counts those completed, LastScan
	// is the last one's.
	Scanning  bool
	Refreshes int
	LastScan  ScanStats
	// LastGood is when Redis last answered a read of the namespace (a refresh or a read after
	// notifications): the age of the data on screen.
	LastGood time.Time
	// Interval is the wait between the starts of two full refreshes now: the poll interval,
	// or, while keyspace notifications keep the table live, the drift rescan's.
	Interval time.Duration
	// Sample is the sampling run under way (Watcher.Sample); SampleDone is the ID of the last
	// run that ended by itself.
	Sample     SampleRun
	SampleDone int
}

// Loaded reports whether a full refresh has completed.
func (s Status) Loaded() bool { return s.Refreshes > 0 }

// Update is what a Watcher hands to the program: the new Status, and a notice when something
// happened that the operator should know (Sticky: it must stay until the next one).
type Update struct {
	Status Status
	Notice string
	Err    bool
	Sticky bool
}

// Watcher owns the console's refresh loops, k9s style: the heartbeat (PING, and INFO once per
// connection, with Backoff while Redis does not answer), the full refreshes (polling, or the
// drift rescan while keyspace notifications are live, and at once when notifications may have
// been lost or Redis answers again), the keyspace feed and its targeted reads, the lock-event
// feed, the re-reads of countdowns at zero (RereadExpired) and the sampling runs the operator
// starts (Sample). What they read goes to the hub; what they know comes out as Updates. The
// program never schedules any of it.
type Watcher struct {
	src  *Source
	hub  *Hub
	opts WatchOptions

	out chan Update
	// refresh holds one request for a full refresh (Refresh): one asked for while a refresh
	// runs starts as soon as it ends, since it may have walked past the keys concerned.
	refresh chan struct{}
	// sample holds the latest Sample request.
	sample chan sampleReq

	mu      sync.Mutex
	st      Status
	changed chan struct{} // closed and replaced on every change of st
	// sampleIDs numbers the sampling runs.
	sampleIDs atomic.Int64
}

// NewWatcher returns a Watcher of src feeding hub; start it with Run.
func NewWatcher(src *Source, hub *Hub, opts WatchOptions) *Watcher {
	if opts.Refresh <= 0 {
		opts.Refresh = time.Second
	}
	if opts.KeyspacePoll <= 0 {
		opts.KeyspacePoll = 5 * time.Minute
	}
	w := &Watcher{
		src: src, hub: hub, opts: opts,
		out:     make(chan Update, watchUpdates),
		refresh: make(chan struct{}, 1),
		sample:  make(chan sampleReq, 1),
		changed: make(chan struct{}),
	}
	w.st.Interval = w.Interval(w.st)
	return w
}

// Run runs every loop until ctx ends, and returns when they all did.
func (w *Watcher) Run(ctx context.Context) {
	loops := []func(context.Context){w.heartbeat, w.refreshes, w.keyspace, w.sampling,
		func(ctx context.Context) { w.src.RereadExpired(ctx, w.hub) }}
	if w.opts.Events {
		loops = append(loops, w.events)
	}
	var wg sync.WaitGroup
	for _, loop := range loops {
		wg.Go(func() { loop(ctx) })
	}
	wg.Wait()
}

// Next waits for the next Update, or returns false when ctx ends.
func (w *Watcher) Next(ctx context.Context) (Update, bool) {
	select {
	case u := <-w.out:
		return u, true
	case <-ctx.Done():
		return Update{}, false
	}
}

// Status returns the current Status. The program must not call it while it runs (it would
// wait for a feed that waits for the program to take its Update): the program has Updates.
func (w *Watcher) Status() Status {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.st
}

// Refresh asks for a full refresh now, or as soon as the one under way ends; while Redis does
// not answer, once it does. It never blocks.
func (w *Watcher) Refresh() {
	select {
	case w.refresh <- struct{}{}:
	default:
	}
}

// Interval is the wait between the starts of two refreshes for st (Status.Interval): the
// poll interval, or the time a refresh takes within the budget; while keyspace notifications
// keep the table live, DriftInterval.
func (w *Watcher) Interval(st Status) time.Duration {
	if st.Keyspace.On {
		return DriftInterval(w.opts.KeyspacePoll, st.LastScan)
	}
	return max(w.opts.Refresh, st.LastScan.Took)
}

// update changes the status with f and hands the program the new one with notice n (the
// text empty: none). It sends while holding the lock, so Updates arrive in order.
func (w *Watcher) update(ctx context.Context, f func(st *Status), n Update) Status {
	w.mu.Lock()
	defer w.mu.Unlock()
	f(&w.st)
	w.st.Interval = w.Interval(w.st)
	close(w.changed)
	w.changed = make(chan struct{})
	n.Status = w.st
	select {
	case w.out <- n:
	case <-ctx.Done():
	}
	return w.st
}

// await waits until ok holds for the status, and returns it; false when ctx ended first.
func (w *Watcher) await(ctx context.Context, ok func(st Status) bool) (Status, bool) {
	for {
		w.mu.Lock()
		st, changed := w.st, w.changed
		w.mu.Unlock()
		if ok(st) {
			return st, true
		}
		select {
		case <-ctx.Done():
			return st, false
		case <-changed:
		}
	}
}

func answering(st Status) bool { return st.Conn.InfoOK && !st.Conn.Down }

// heartbeat sends PING every HeartbeatEvery, and INFO, DBSIZE and CONFIG GET once per
// connection; while Redis does not answer it retries with Backoff, and when Redis answers
// again it asks for a full refresh.
func (w *Watcher) heartbeat(ctx context.Context) {
	var retry Backoff
	for {
		needInfo := !w.Status().Conn.InfoOK
		lat, info, err := w.ping(ctx, needInfo)
		if ctx.Err() != nil {
			return
		}
		wait := HeartbeatEvery
		if err != nil {
			now := time.Now()
			retry.Fail(now)
			wait = retry.Wait(now)
			w.update(ctx, func(st *Status) {
				st.Conn.Down, st.Conn.InfoOK, st.Conn.Err, st.Conn.RetryAt = true, false, err, now.Add(wait)
			}, Update{Notice: "Redis does not answer: " + err.Error(), Err: true, Sticky: true})
		} else {
			retry.Reset()
			wasDown := w.Status().Conn.Down
			n := Update{}
			if wasDown {
				n.Notice = "Redis answers again: refreshing"
				w.Refresh()
			}
			w.update(ctx, func(st *Status) {
				st.Conn.Down, st.Conn.Err, st.Conn.Latency = false, nil, lat
				if needInfo {
					st.Conn.Info, st.Conn.InfoOK = info, true
				}
			}, n)
		}
		if !sleep.For(ctx, wait) {
			return
		}
	}
}

func (w *Watcher) ping(ctx context.Context, needInfo bool) (time.Duration, ServerInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	lat, err := w.src.Ping(ctx)
	if err != nil || !needInfo {
		return lat, ServerInfo{}, err
	}
	info, err := w.src.ServerInfo(ctx)
	return lat, info, err
}

// refreshes runs the full refreshes: the first once the heartbeat knows whether keyspace
// notifications are on and, when they are, once their subscription is made or failed (so
// nothing changes unseen between the two); then every Interval, and at once on Refresh.
func (w *Watcher) refreshes(ctx context.Context) {
	ready := func(st Status) bool {
		return answering(st) && (!st.Conn.Info.Keyspace() || st.Keyspace.On || st.Keyspace.Err != nil)
	}
	for {
		if _, ok := w.await(ctx, ready); !ok {
			return
		}
		select { // this refresh is the one asked for
		case <-w.refresh:
		default:
		}
		w.update(ctx, func(st *Status) { st.Scanning = true }, Update{})
		stats, err := w.src.Scan(ctx, w.hub)
		if ctx.Err() != nil {
			return
		}
		var wait time.Duration
		if err != nil {
			// The heartbeat notices an outage and asks for a refresh when Redis answers; if
			// Redis does answer (a refused command, say), try again after the interval.
			st := w.update(ctx, func(st *Status) { st.Scanning = false },
				Update{Notice: "refresh failed: " + err.Error(), Err: true})
			wait = max(st.Interval, RetryMin)
		} else {
			st := w.update(ctx, func(st *Status) {
				st.Scanning, st.LastScan, st.LastGood = false, stats, time.Now()
				st.Refreshes++
			}, Update{})
			wait = max(st.Interval-stats.Took, 0)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-w.refresh:
		case <-t.C:
		}
		t.Stop()
	}
}

// feed describes a subscription for subscribe: when to try it, its state in Status, and the
// notice of its first failure in a row (followed by the error).
type feed[T any] struct {
	ready       func(st Status) bool
	state       func(st *Status) *Feed
	unavailable string
	// subscribed is the notice when it is made after failures ("": none).
	subscribed string
	// made, if set, runs once it is made, before the feed is marked on.
	made  func()
	open  func(ctx context.Context, st Status) (T, error)
	close func(T)
}

// subscribe makes f's subscription once f.ready holds, retrying with Backoff while it fails,
// and marks it on; ok is false when ctx ended first.
func subscribe[T any](ctx context.Context, w *Watcher, f feed[T]) (sub T, ok bool) {
	recovered := false
	var retry Backoff
	for {
		st, ok := w.await(ctx, f.ready)
		if !ok {
			return sub, false
		}
		w.update(ctx, func(st *Status) { f.state(st).Pending = true }, Update{})
		sub, err := f.open(ctx, st)
		if ctx.Err() != nil {
			if err == nil {
				f.close(sub)
			}
			return sub, false
		}
		if err == nil {
			if f.made != nil {
				f.made()
			}
			n := Update{}
			if recovered {
				n.Notice = f.subscribed
			}
			w.update(ctx, func(st *Status) { *f.state(st) = Feed{On: true} }, n)
			return sub, true
		}
		now := time.Now()
		n := Update{}
		if retry.Fail(now) {
			n = Update{Notice: f.unavailable + ": " + err.Error(), Err: true}
		}
		recovered = true
		w.update(ctx, func(st *Status) { *f.state(st) = Feed{Err: err} }, n)
		if !sleep.For(ctx, retry.Wait(now)) {
			return sub, false
		}
	}
}

// keyspace subscribes to keyspace notifications once the server is known to publish them
// (retrying with Backoff), then reads the keys they name, coalesced and within the budget,
// and asks for a full refresh when some may have been lost.
func (w *Watcher) keyspace(ctx context.Context) {
	ks, ok := subscribe(ctx, w, feed[*Keyspace]{
		ready:       func(st Status) bool { return answering(st) && st.Conn.Info.Keyspace() },
		state:       func(st *Status) *Feed { return &st.Keyspace },
		unavailable: "keyspace notifications unavailable, polling only",
		open: func(ctx context.Context, st Status) (*Keyspace, error) {
			return w.src.SubscribeKeyspace(ctx, st.Conn.Info.DB)
		},
		close: (*Keyspace).Close,
		// What changed before the subscription is caught by a refresh now (the first one,
		// when it was waiting for this: asked for before the feed is marked on, so it is one
		// refresh, not two); from here on notifications keep the table live.
		made: w.Refresh,
	})
	if !ok {
		return
	}
	defer ks.Close()
	for {
		keys, lost, err := ks.Next(ctx, KeyspaceReadBatch)
		if err == nil {
			_, err = w.src.ReadInto(ctx, w.hub, keys)
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			// Redis is away: the heartbeat shows it; go-redis resubscribes by itself. Pause so
			// an outage does not spin.
			if !sleep.For(ctx, time.Second) {
				return
			}
			continue
		}
		if lost {
			w.Refresh()
		}
		w.update(ctx, func(st *Status) { st.LastGood = time.Now() }, Update{})
	}
}

// events subscribes to the namespace's lock events (retrying with Backoff while Redis
// answers) and forwards them to the hub; go-redis resubscribes a subscription once made.
func (w *Watcher) events(ctx context.Context) {
	sub, ok := subscribe(ctx, w, feed[*events.Subscription]{
		ready:       func(st Status) bool { return !st.Conn.Down },
		state:       func(st *Status) *Feed { return &st.Events },
		unavailable: "lock events unavailable (no contention from events), retrying",
		subscribed:  "lock events subscribed",
		open: func(ctx context.Context, _ Status) (*events.Subscription, error) {
			return events.Subscribe(ctx, w.src.client, w.src.ns)
		},
		close: func(sub *events.Subscription) { _ = sub.Close() },
	})
	if !ok {
		return
	}
	defer func() { _ = sub.Close() }()
	w.hub.Forward(ctx, sub.C())
}
