package provider

import (
	"context"
	"log/slog"
	"math"
	"time"
)

// Defaults, the same as stock Medusa's.
const (
	// DefaultNamespace is the key prefix stock Medusa uses.
	DefaultNamespace = "medusa_lock:"
	// DefaultOwner is the anonymous owner, used when no owner is given.
	DefaultOwner = "*"
	// ExecuteOwnerPrefix starts the owner of every Execute and lease: "execute:<uuid v4>".
	ExecuteOwnerPrefix = "execute:"
	// DefaultWaitLockingTimeout bounds how long Execute waits for its keys.
	DefaultWaitLockingTimeout = 5 * time.Second
	// DefaultRetryInterval is the first wait between attempts on a held key.
	DefaultRetryInterval = 20 * time.Millisecond
	// DefaultMaximumRetryInterval caps the wait between attempts.
	DefaultMaximumRetryInterval = time.Second
	// DefaultBackoffFactor multiplies the wait after every failed attempt.
	DefaultBackoffFactor = 2.0
	// DefaultLeaseExpire is the TTL of a lock or lease whose Expire is zero (AcquireOptions,
	// LeaseOptions, ExecuteOptions): stock execute's default lease.
	DefaultLeaseExpire = 60 * time.Second
	// DefaultQueueTicketTTL is the life of an unrefreshed fair-queue ticket (QueueTicketTTL).
	DefaultQueueTicketTTL = 2 * time.Second
	// MinRenewInterval is the floor of the renewal interval, max(expire/3, 250 ms) as in stock.
	MinRenewInterval = 250 * time.Millisecond
)

// NoExpiry is the TTL of a lock that never expires, both asked for and reported. As
// AcquireOptions.Expire it takes locks without a TTL: what stock Medusa's acquire does when no
// expire is given; such a lock stays until it is released, also when its holder died. It is the
// one way to ask for that (a zero Expire gives DefaultLeaseExpire, as for a lease), and a value
// no arithmetic on durations yields by accident. AcquireLease and Execute refuse it with
// ErrInvalidArgument: a lease always expires. Lock.TTL reads NoExpiry for a key without TTL.
const NoExpiry time.Duration = math.MinInt64

// Options tune a Provider. The zero value (or a nil *Options) gives stock Medusa's defaults.
type Options struct {
	// Namespace prefixes every key. Default "medusa_lock:". Stock Medusa honours an empty
	// namespace and then scans the whole database in releaseAll; this provider does not allow
	// that: an empty Namespace means the default.
	Namespace string
	// WaitLockingTimeout bounds Execute's wait for its keys when the call gives no Timeout.
	// Default 5 s.
	WaitLockingTimeout time.Duration
	// DefaultRetryInterval is the first wait between attempts on a held key. Default 20 ms.
	DefaultRetryInterval time.Duration
	// MaximumRetryInterval caps the wait between attempts. Default 1 s.
	MaximumRetryInterval time.Duration
	// BackoffFactor multiplies the wait after each failed attempt. Default 2. Each wait is
	// jittered to 50–100 % of its value; the delay is shared by all keys of one call.
	BackoffFactor float64
	// Waker, when set, may end a wait between attempts early, in addition to the Provider's
	// own wake-ups (see docs/waiting.md): whenever this project's scripts (in any process) free
	// a key, or the server's keyspace notifications report it deleted or expired, the Waker's
	// ctx is cancelled and the waiter retries immediately. Without a Waker the provider sleeps
	// the backoff delay unless woken. The backoff delay still grows after such a retry.
	Waker Waker
	// WakeLocalWaiters is ignored.
	//
	// Deprecated: every waiter is now woken when its key is freed, by this Provider or by any
	// other process (see docs/waiting.md); FairQueue keeps those wake-ups fair.
	WakeLocalWaiters bool
	// FairQueue, when true, serves the waiting calls (Acquire with AwaitQueue, AcquireLease,
	// Execute) of every Provider that has it on first come, first served on each key: a call
	// that finds a key held takes a ticket in the key's queue and takes the key only at the
	// queue's head, and a free key is taken by no call of ours (an Acquire without AwaitQueue
	// included) while someone is ahead in its queue. Stock Medusa processes do not queue and
	// are never blocked by the queue. Off by default (see docs/waiting.md for why).
	FairQueue bool
	// QueueTicketTTL is how long a waiter's ticket in a fair queue lives without being
	// refreshed: the longest a dead waiter holds up the queue, plus one refresh interval of
	// the waiter behind it (a third of this; live waiters refresh their ticket at least that
	// often, even when their backoff is longer). Default 2 s.
	QueueTicketTTL time.Duration
	// Observer, when set, receives every lock event (waiting, acquired, released, gave up,
	// renewed, lost). It is called synchronously and must not block. MultiObserver combines
	// several.
	Observer Observer
	// Logger receives warnings (failed renewals, failed clean-ups). Default slog.Default().
	Logger *slog.Logger
	// Holder names this process in the holder record of every lock it takes (docs/data-model.md):
	// default this host's name, this process's id, the executable's file name as Program (set
	// a service name here) and ClientGo. Empty fields take their default.
	Holder Holder
}

// Waker ends a wait between two acquisition attempts early. Implementations return when the key
// may have become free, when d has elapsed, or when ctx is done, whichever comes first.
//
// A Waker only needs to learn of what the Provider's wake-ups miss: the ctx it gets is derived
// from the caller's and is also cancelled when the Provider hears that redisKey was freed, so
// honouring ctx is enough to be woken by those.
type Waker interface {
	Wait(ctx context.Context, redisKey string, d time.Duration)
}

// sleepWaker waits the full backoff delay: the polling that stock Medusa does.
type sleepWaker struct{}

func (sleepWaker) Wait(ctx context.Context, _ string, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// EventKind names what happened to a lock.
type EventKind string

// The lock events an Observer receives.
const (
	EventWaiting  EventKind = "waiting"  // a key was held by someone else; the caller waits
	EventAcquired EventKind = "acquired" // the key was taken (Wait says how long it took)
	EventReleased EventKind = "released" // the owner released the key (Held says how long)
	EventGaveUp   EventKind = "gave_up"  // the caller stopped trying: conflict, timeout or cancel
	EventRenewed  EventKind = "renewed"  // a lease was extended
	EventLost     EventKind = "lost"     // a lease could not be renewed: another owner or expiry
)

// Event is one thing that happened to one key.
type Event struct {
	Kind  EventKind
	Key   string // without namespace
	Owner string
	Time  time.Time
	// Wait is the time spent waiting before Acquired or GaveUp.
	Wait time.Duration
	// Held is the time the key was held, on Released and Lost.
	Held time.Duration
}

// Observer receives lock events; see Options.Observer.
type Observer interface {
	LockEvent(Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(Event)

// LockEvent calls f.
func (f ObserverFunc) LockEvent(e Event) { f(e) }

// MultiObserver returns an Observer that passes every event to each of observers, in order
// (metrics, a publisher, a console's feed: one Provider has one Observer). Nil observers are
// skipped; with none left it returns nil, which Options treats as no observer, and with one it
// returns that one. Each observer must itself not block; one that panics keeps the event from
// those after it (the Provider logs the panic and goes on).
func MultiObserver(observers ...Observer) Observer {
	var list multiObserver
	for _, o := range observers {
		if o != nil {
			list = append(list, o)
		}
	}
	switch len(list) {
	case 0:
		return nil
	case 1:
		return list[0]
	}
	return list
}

type multiObserver []Observer

func (m multiObserver) LockEvent(e Event) {
	for _, o := range m {
		o.LockEvent(e)
	}
}

func (o *Options) withDefaults() Options {
	var out Options
	if o != nil {
		out = *o
	}
	if out.Namespace == "" {
		out.Namespace = DefaultNamespace
	}
	if out.WaitLockingTimeout <= 0 {
		out.WaitLockingTimeout = DefaultWaitLockingTimeout
	}
	if out.DefaultRetryInterval <= 0 {
		out.DefaultRetryInterval = DefaultRetryInterval
	}
	if out.MaximumRetryInterval <= 0 {
		out.MaximumRetryInterval = DefaultMaximumRetryInterval
	}
	if out.BackoffFactor < 1 {
		out.BackoffFactor = DefaultBackoffFactor
	}
	if out.QueueTicketTTL <= 0 {
		out.QueueTicketTTL = DefaultQueueTicketTTL
	}
	if out.Waker == nil {
		out.Waker = sleepWaker{}
	}
	if out.Logger == nil {
		out.Logger = slog.Default()
	}
	out.Holder = out.Holder.withDefaults(thisProcess())
	return out
}
