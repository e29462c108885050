package provider

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/internal/backoff"
	"github.com/locktui/locktui/internal/lockwire"
	"github.com/locktui/locktui/internal/pubsub"
	"github.com/locktui/locktui/internal/sleep"
)

// Wake-up listener tuning.
const (
	// listenConfirmTimeout bounds the wait for Redis to confirm the wake-up subscription.
	listenConfirmTimeout = 5 * time.Second
	// listenPing is how long the listener waits for a message before it pings the server, so a
	// connection that died silently is noticed and replaced.
	listenPing = 30 * time.Second
	// listenRetryMin and listenRetryMax bound the wait between attempts to subscribe again.
	listenRetryMin = 100 * time.Millisecond
	listenRetryMax = 5 * time.Second
	// listenLinger is how long the listener keeps running after the last lease ended (when no
	// waiter uses it either), so that a Provider that runs one short lease after another
	// (Execute in a loop) does not subscribe and unsubscribe with each of them. Close stops it
	// at once; after the last wait it stops at once, as before leases used it.
	listenLinger = 30 * time.Second
)

// listener is a Provider's one pub/sub connection for wake-ups, shared by all its waiters and
// leases. It runs while at least one call waits for a held key or one lease is held (use/unuse
// count them), and listenLinger after the last lease ended: it subscribes to
// FreeChannel (the releases, give-backs, unlinks and force-releases of every process running
// this project's scripts) and, on a standalone or Sentinel server, to the keyspace
// notifications of the namespace (stock Medusa's releases and every expiry, when the server has
// notify-keyspace-events with K, g and x). Each message wakes the registrations (see wakeups)
// waiting for its key: all of them, or, when the message names a queue head, that head only
// (and the waiters that do not queue). The leases holding the key hear it too (hear.go).
//
// Wake-ups only shorten a backoff sleep: until Redis has confirmed the subscription, and
// whenever the connection is down, nothing wakes and waiters poll with stock's backoff,
// unchanged. Each confirmation (the first, and every one after a reconnect) wakes every waiter
// once, so a key freed while nothing listened costs no backoff sleep; a message lost otherwise
// costs at most one.
type listener struct {
	p *Provider

	mu     sync.Mutex
	users  int
	cancel context.CancelFunc
	done   chan struct{}
	linger *time.Timer // stops the listener listenLinger after its last user left
	closed bool        // Close was called: nothing starts it again

	live atomic.Bool // Redis confirmed the subscription and the connection is up
}

// use notes one more user, starting the listener if it is not running.
func (l *listener) use() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.users++
	if l.linger != nil {
		l.linger.Stop()
	}
	if l.cancel != nil || l.closed {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel, l.done = cancel, make(chan struct{})
	go l.run(ctx, l.done)
}

// unuse notes one user less. When it was the last: a lease (lease true) leaves the listener
// running listenLinger more, and never blocks (a lease may end from the listener's own
// goroutine); a waiter stops it and waits for its goroutine to end.
func (l *listener) unuse(lease bool) {
	l.mu.Lock()
	if l.users--; l.users > 0 || l.cancel == nil {
		l.mu.Unlock()
		return
	}
	if !lease {
		l.mu.Unlock()
		l.stop(false)
		return
	}
	defer l.mu.Unlock()
	if l.linger == nil {
		l.linger = time.AfterFunc(listenLinger, l.idle)
	} else {
		l.linger.Reset(listenLinger)
	}
}

// idle stops the listener if nobody used it since its linger timer was armed.
func (l *listener) idle() { l.stop(false) }

// stop ends the listener's goroutine, unless it has users again, and waits for it; closing, it
// stops it whatever uses it and keeps it from starting again.
func (l *listener) stop(closing bool) {
	l.mu.Lock()
	if !closing && l.users > 0 { // used again since it was left
		l.mu.Unlock()
		return
	}
	if closing {
		l.closed = true
	}
	if l.linger != nil {
		l.linger.Stop()
	}
	cancel, done := l.cancel, l.done
	l.cancel, l.done = nil, nil
	l.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// spec is what the listener subscribes to.
func (l *listener) spec() pubsub.Spec {
	spec := pubsub.Spec{Channels: []string{l.p.channel}}
	if db, ok := keyspaceDB(l.p.client); ok {
		spec.Patterns = []string{keyspacePrefix(db) + lockwire.LiteralPattern(l.p.opts.Namespace) + "*"}
	}
	return spec
}

// keyspaceDB is the database whose keyspace notifications the listener follows. A Cluster has
// none: its notifications are local to each node, and stock Medusa, whose releases they would
// announce, does not run on a Cluster.
func keyspaceDB(c redis.UniversalClient) (int, bool) {
	if cl, ok := c.(*redis.Client); ok {
		return cl.Options().DB, true
	}
	return 0, false
}

func keyspacePrefix(db int) string { return "__keyspace@" + strconv.Itoa(db) + "__:" }

// run subscribes, dispatches messages until ctx ends, and subscribes again after a failure.
func (l *listener) run(ctx context.Context, done chan struct{}) {
	defer close(done)
	defer l.live.Store(false)
	spec := l.spec()
	retry := backoff.Doubling(listenRetryMin, listenRetryMax)
	first := true
	for ctx.Err() == nil {
		ps, err := pubsub.Open(ctx, l.p.client, spec, listenConfirmTimeout)
		if err != nil {
			if ctx.Err() == nil {
				l.p.opts.Logger.Debug("wake-ups unavailable; waiters poll", "error", err)
			}
			if !sleep.For(ctx, retry.Next()) {
				return
			}
			continue
		}
		retry.Reset()
		l.receive(ctx, ps, first)
		first = false
		_ = ps.Close()
	}
}

// receive dispatches ps's messages until ctx ends or the connection fails for good.
func (l *listener) receive(ctx context.Context, ps *redis.PubSub, first bool) {
	stop := context.AfterFunc(ctx, func() { _ = ps.Close() }) // unblocks a pending receive
	defer stop()
	l.confirmed(first)
	defer l.live.Store(false)
	failures := 0
	for {
		msg, err := ps.ReceiveTimeout(context.Background(), listenPing)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				_ = ps.Ping(context.Background())
				continue
			}
			// go-redis reconnects and subscribes again on the next receive; until Redis
			// confirms that, messages may be lost.
			l.live.Store(false)
			if failures++; failures > 3 {
				return // start over with a fresh subscription
			}
			if !sleep.For(ctx, listenRetryMin) {
				return
			}
			continue
		}
		failures = 0
		switch m := msg.(type) {
		case *redis.Subscription:
			if !l.live.Load() {
				l.confirmed(false) // go-redis subscribed again after a reconnect
			}
		case *redis.Message:
			l.dispatch(m)
		}
	}
}

// confirmed notes that Redis confirmed the subscription: from now on every freed key is heard.
// The waiters retry once, for a key freed while nothing listened was announced to nobody. On the
// listener's first subscription (first), the leases check their keys once too, for a force-release or a
// delete announced between their grant and the subscription; after a reconnect they do not (a
// reconnect may be a restart, which the epoch watcher reports as such, and a renewal that found
// the keys gone first would not say so), and they learn what they missed at their next renewal.
func (l *listener) confirmed(first bool) {
	l.live.Store(true)
	l.p.wakeups.wakeAll()
	if first {
		l.p.holding.recheck()
	}
}

// dispatch tells the leases and wakes the waiters a message is about (hear.go): holders first.
func (l *listener) dispatch(m *redis.Message) {
	ns := l.p.opts.Namespace
	if m.Channel == l.p.channel {
		head, rk, ok := strings.Cut(m.Payload, "\n")
		key, inNS := strings.CutPrefix(rk, ns)
		if !ok || !inNS {
			return
		}
		if claim, revoked := strings.CutPrefix(head, revokedPrefix); revoked {
			l.p.holding.revoked(key, claim) // the key stays held: no waiter to wake
			return
		}
		l.p.holding.gone(key, "freed")
		l.p.wakeups.wakeHead(key, head)
		return
	}
	// A keyspace notification: the payload is the event.
	switch m.Payload {
	case "del", "expired", "evicted", "unlink":
	default:
		return
	}
	_, rk, ok := strings.Cut(m.Channel, "__:")
	if key, inNS := strings.CutPrefix(rk, ns); ok && inNS {
		l.p.holding.gone(key, m.Payload)
		l.p.wakeups.wakeHead(key, "")
	}
}

// revokedPrefix starts the first line of revoke.lua's announcement that it told a lease's holder
// to end it: "!revoke <claim>\n<lock key>".
const revokedPrefix = "!revoke "
