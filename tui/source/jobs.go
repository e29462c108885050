package source

import (
	"context"
	"errors"
	"time"

	"github.com/locktui/locktui/events"
)

// expiryEvery is the shortest wait between two re-reads of keys whose countdown reached zero:
// the keys that reach zero meanwhile are read together.
const expiryEvery = 100 * time.Millisecond

// heartbeatJob sends PING every HeartbeatEvery, and INFO, DBSIZE and CONFIG GET once per
// connection; while Redis does not answer it says so, retried with the job's backoff, and when
// Redis answers again it urges a full refresh.
func (w *Watcher) heartbeatJob() *Job {
	return &Job{
		Name:  "heartbeat",
		Every: func() time.Duration { return HeartbeatEvery },
		Run: func(ctx context.Context) error {
			needInfo := !w.Status().Conn.InfoOK
			lat, info, err := w.ping(ctx, needInfo)
			if err != nil {
				return err
			}
			n := Update{}
			if w.Status().Conn.Down {
				n.Notice = "Redis answers again: refreshing"
				w.Refresh()
			}
			w.update(ctx, func(st *Status) {
				st.Conn.Down, st.Conn.Err, st.Conn.Latency = false, nil, lat
				if needInfo {
					st.Conn.Info, st.Conn.InfoOK = info, true
				}
			}, n)
			return nil
		},
		Failed: func(ctx context.Context, err error, _ int, wait time.Duration) {
			retryAt := time.Now().Add(wait)
			w.update(ctx, func(st *Status) {
				st.Conn.Down, st.Conn.InfoOK, st.Conn.Err, st.Conn.RetryAt = true, false, err, retryAt
			}, Update{Notice: "Redis does not answer: " + err.Error(), Err: true, Sticky: true})
		},
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

// refreshJob runs the full refreshes: the first once the heartbeat knows whether keyspace
// notifications are on and, when they are, once their subscription is made or failed (so
// nothing changes unseen between the two); then every Interval, and at once on Refresh. A
// failed refresh is retried no sooner than the interval; when Redis does not answer, the
// heartbeat urges one once it does.
func (w *Watcher) refreshJob() *Job {
	return &Job{
		Name:  "refresh",
		Every: func() time.Duration { return w.Status().Interval },
		Ready: w.until(func(st Status) bool {
			return answering(st) && (!st.Conn.Info.Keyspace() || st.Keyspace.On || st.Keyspace.Err != nil)
		}),
		Run: func(ctx context.Context) error {
			w.update(ctx, func(st *Status) { st.Scanning = true }, Update{})
			stats, err := w.src.Scan(ctx, w.hub)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil {
				w.update(ctx, func(st *Status) { st.Scanning = false },
					Update{Notice: "refresh failed: " + err.Error(), Err: true})
				return err
			}
			w.update(ctx, func(st *Status) {
				st.Scanning, st.LastScan, st.LastGood = false, stats, time.Now()
				st.Refreshes++
			}, Update{})
			return nil
		},
	}
}

// feed describes a subscription job: when to make it, its state in Status, the notice of its
// first failure in a row (followed by the error), and what a round does once it is made.
type feed[T any] struct {
	name        string
	ready       func(st Status) bool
	state       func(st *Status) *Feed
	unavailable string
	// subscribed is the notice when it is made after failures ("": none).
	subscribed string
	// made, if set, runs once it is made, before the feed is marked on.
	made  func()
	open  func(ctx context.Context, st Status) (T, error)
	close func(T)
	// use is a round once it is made: a failure with errEnded makes it again.
	use   func(ctx context.Context, sub T) error
	delay time.Duration
}

// errEnded says a subscription ended: the next round makes it again.
var errEnded = errors.New("subscription ended")

// feedJob makes f's subscription once f.ready holds, retried with the job's backoff, marks it
// on, and then runs f.use in every round; the subscription is closed when the job ends.
func feedJob[T any](w *Watcher, f feed[T]) *Job {
	var (
		sub        T
		on, failed bool
	)
	j := &Job{Name: f.name, Delay: f.delay, Ready: w.until(f.ready)}
	j.Run = func(ctx context.Context) error {
		if on {
			err := f.use(ctx, sub)
			if errors.Is(err, errEnded) {
				f.close(sub)
				on = false
			}
			return err
		}
		w.update(ctx, func(st *Status) { f.state(st).Pending = true }, Update{})
		s, err := f.open(ctx, w.Status())
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			f.close(s)
			return ctx.Err()
		}
		sub, on = s, true
		if f.made != nil {
			f.made()
		}
		n := Update{}
		if failed {
			n.Notice = f.subscribed
		}
		w.update(ctx, func(st *Status) { *f.state(st) = Feed{On: true} }, n)
		return nil
	}
	j.Failed = func(ctx context.Context, err error, failures int, _ time.Duration) {
		if on {
			return // a round of a live subscription: the heartbeat shows an outage
		}
		n := Update{}
		if failures == 1 {
			n = Update{Notice: f.unavailable + ": " + err.Error(), Err: true}
		}
		failed = true
		w.update(ctx, func(st *Status) { *f.state(st) = Feed{Err: err} }, n)
	}
	j.Done = func() {
		if on {
			f.close(sub)
		}
	}
	return j
}

// keyspaceJob subscribes to keyspace notifications once the server is known to publish them,
// then, triggered by them, reads the keys they name (coalesced for keyspaceCoalesce, within
// the budget, while Redis answers) and asks for a full refresh when some may have been lost.
func (w *Watcher) keyspaceJob() *Job {
	var j *Job
	j = feedJob(w, feed[*Keyspace]{
		name:        "keyspace",
		ready:       func(st Status) bool { return answering(st) && st.Conn.Info.Keyspace() },
		state:       func(st *Status) *Feed { return &st.Keyspace },
		unavailable: "keyspace notifications unavailable, polling only",
		open: func(ctx context.Context, st Status) (*Keyspace, error) {
			return w.src.SubscribeKeyspace(ctx, st.Conn.Info.DB, j.Trigger)
		},
		close: (*Keyspace).Close,
		// What changed before the subscription is caught by a refresh now (the first one,
		// when it was waiting for this: asked for before the feed is marked on, so it is one
		// refresh, not two); from here on notifications keep the table live.
		made:  w.Refresh,
		use:   w.readNotified,
		delay: keyspaceCoalesce,
	})
	return j
}

// readNotified is a round of the keyspace job once subscribed: it reads the keys notified.
func (w *Watcher) readNotified(ctx context.Context, ks *Keyspace) error {
	keys, lost, err := ks.Take(KeyspaceReadBatch)
	if err != nil {
		return err
	}
	if _, err := w.src.ReadInto(ctx, w.hub, keys); err != nil {
		return err // go-redis resubscribes by itself
	}
	if lost {
		w.Refresh()
	}
	w.update(ctx, func(st *Status) { st.LastGood = time.Now() }, Update{})
	return nil
}

// eventsJob subscribes to the namespace's lock events while Redis answers and forwards them to
// the hub; go-redis resubscribes a subscription once made.
func (w *Watcher) eventsJob() *Job {
	var j *Job
	j = feedJob(w, feed[*events.Subscription]{
		name:        "events",
		ready:       func(st Status) bool { return !st.Conn.Down },
		state:       func(st *Status) *Feed { return &st.Events },
		unavailable: "lock events unavailable (no contention from events), retrying",
		subscribed:  "lock events subscribed",
		open: func(ctx context.Context, _ Status) (*events.Subscription, error) {
			return events.Subscribe(ctx, w.src.client, w.src.ns)
		},
		close: func(sub *events.Subscription) { _ = sub.Close() },
		// The round after the subscription is made forwards, as long as it delivers.
		made: func() { j.Urge() },
		use: func(ctx context.Context, sub *events.Subscription) error {
			w.hub.Forward(ctx, sub.C())
			return errEnded
		},
	})
	return j
}

// forwardJob forwards the lock events of ch, subscribed to by the caller, to the hub: its one
// round lasts as long as ch delivers.
func (w *Watcher) forwardJob(ch <-chan events.Event) *Job {
	return &Job{Name: "events", Run: func(ctx context.Context) error {
		w.hub.Forward(ctx, ch)
		return nil
	}}
}

// rereadJob reads again the keys whose countdown reached zero without news, triggered by the
// hub: at once, at most one batch of up to KeyspaceReadBatch keys per expiryEvery, within the
// budget, while Redis answers, and hands what it read to the hub, so the row turns GONE or
// shows its new TTL instead of sitting at 0 until the next full refresh (an `expired`
// notification can be lost; without notifications the next poll may be far when the budget
// stretched it). A failed read is retried with the job's backoff.
func (w *Watcher) rereadJob() *Job {
	var (
		j    *Job
		keys []string // taken from the hub, not read yet
	)
	j = &Job{
		Name:  "reread",
		Gap:   func() time.Duration { return expiryEvery },
		Ready: w.until(answering),
		Run: func(ctx context.Context) error {
			if len(keys) == 0 {
				keys = w.hub.takeExpired(KeyspaceReadBatch)
			}
			if _, err := w.src.ReadInto(ctx, w.hub, keys); err != nil {
				return err
			}
			keys = nil
			if w.hub.expiredLeft() {
				j.Trigger()
			}
			return nil
		},
	}
	return j
}
