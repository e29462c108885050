package source

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locktui/locktui/events"
)

// HeartbeatEvery is the PING interval while Redis answers.
const HeartbeatEvery = time.Second

// watchUpdates is the capacity of the queue of Updates: the program reads them at once, so
// the queue only absorbs a burst; the jobs wait while it is full.
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
	// EventsFrom, if set, delivers lock events the caller subscribed to: they are forwarded
	// to the hub, and Events is ignored.
	EventsFrom <-chan events.Event
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

// Status is a snapshot of what the Watcher's jobs know, handed to the program on every change.
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

// Watcher owns the console's background work, k9s style: one Scheduler runs its jobs (the
// heartbeat, the full refreshes, the keyspace and lock-event feeds, the re-reads of
// countdowns at zero, the sampling runs the operator starts, and the hub's builds; see the
// package documentation). What they read goes to the hub; what they know comes out as
// Updates, each with a Status snapshot. The program never schedules any of it.
type Watcher struct {
	src  *Source
	hub  *Hub
	opts WatchOptions

	sched Scheduler
	// refresh and sampling are the jobs that the program's requests urge.
	refresh, sampling *Job

	out chan Update

	mu      sync.Mutex
	st      Status
	changed chan struct{} // closed and replaced on every change of st

	// sampleMu guards the latest Sample request, not yet taken by the sampling job.
	sampleMu  sync.Mutex
	sampleReq *sampleReq
	// sampleIDs numbers the sampling runs.
	sampleIDs atomic.Int64
}

// NewWatcher returns a Watcher of src feeding hub, whose builds it runs too; start it with Run.
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
		changed: make(chan struct{}),
	}
	w.st.Interval = w.Interval(w.st)
	w.refresh, w.sampling = w.refreshJob(), w.samplingJob()
	reread := w.rereadJob()
	hub.notifyExpired(reread.Trigger)
	jobs := []*Job{w.heartbeatJob(), w.refresh, w.keyspaceJob(), reread, w.sampling, hub.Builds()}
	switch {
	case opts.EventsFrom != nil:
		jobs = append(jobs, w.forwardJob(opts.EventsFrom))
	case opts.Events:
		jobs = append(jobs, w.eventsJob())
	}
	for _, j := range jobs {
		w.sched.Add(j)
	}
	return w
}

// Run runs every job until ctx ends, and returns when they all did.
func (w *Watcher) Run(ctx context.Context) { w.sched.Run(ctx) }

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
// wait for a job that waits for the program to take its Update): the program has Updates.
func (w *Watcher) Status() Status {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.st
}

// Refresh asks for a full refresh now, or as soon as the one under way ends; while Redis does
// not answer, once it does. It never blocks.
func (w *Watcher) Refresh() { w.refresh.Urge() }

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

// until returns a Job.Ready that waits until ok holds for the status.
func (w *Watcher) until(ok func(st Status) bool) func(ctx context.Context) bool {
	return func(ctx context.Context) bool {
		for {
			w.mu.Lock()
			st, changed := w.st, w.changed
			w.mu.Unlock()
			if ok(st) {
				return true
			}
			select {
			case <-ctx.Done():
				return false
			case <-changed:
			}
		}
	}
}

func answering(st Status) bool { return st.Conn.InfoOK && !st.Conn.Down }
