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
)

// listener is a Provider's one pub/sub connection for wake-ups, shared by all its waiters. It
// runs while at least one call waits for a held key (use/done count them): it subscribes to
// FreeChannel (the releases, give-backs, unlinks and force-releases of every process running
// this project's scripts) and, on a standalone or Sentinel server, to the keyspace
// notifications of the namespace (stock Medusa's releases and every expiry, when the server has
// notify-keyspace-events with K, g and x). Each message wakes the registrations (see wakeups)
// waiting for its key: all of them, or, when the message names a queue head, that head only
// (and the waiters that do not queue).
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

	live atomic.Bool // Redis confirmed the subscription and the connection is up
}

// use notes one more waiter, starting the listener for the first.
func (l *listener) use() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.users++
	if l.users > 1 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel, l.done = cancel, make(chan struct{})
	go l.run(ctx, l.done)
}

// unuse notes one waiter less; the last one stops the listener and waits for its goroutine.
func (l *listener) unuse() {
	l.mu.Lock()
	l.users--
	if l.users > 0 {
		l.mu.Unlock()
		return
	}
	cancel, done := l.cancel, l.done
	l.cancel, l.done = nil, nil
	l.mu.Unlock()
	cancel()
	<-done
}

// spec is what the listener subscribes to.
func (l *listener) spec() pubsub.Spec {
	spec := pubsub.Spec{Channels: []string{l.p.channel}}
	if db, ok := keyspaceDB(l.p.client); ok {
		spec.Patterns = []string{keyspacePrefix(db) + LiteralPattern(l.p.opts.Namespace) + "*"}
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
	backoff := listenRetryMin
	for ctx.Err() == nil {
		ps, err := pubsub.Open(ctx, l.p.client, spec, listenConfirmTimeout)
		if err != nil {
			if ctx.Err() == nil {
				l.p.opts.Logger.Debug("wake-ups unavailable; waiters poll", "error", err)
			}
			if !sleep.For(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, listenRetryMax)
			continue
		}
		backoff = listenRetryMin
		l.receive(ctx, ps)
		_ = ps.Close()
	}
}

// receive dispatches ps's messages until ctx ends or the connection fails for good.
func (l *listener) receive(ctx context.Context, ps *redis.PubSub) {
	stop := context.AfterFunc(ctx, func() { _ = ps.Close() }) // unblocks a pending receive
	defer stop()
	l.confirmed()
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
				l.confirmed() // go-redis subscribed again after a reconnect
			}
		case *redis.Message:
			l.dispatch(m)
		}
	}
}

// confirmed notes that Redis confirmed the subscription: from now on every freed key is heard.
// The waiters retry once, for a key freed while nothing listened was announced to nobody.
func (l *listener) confirmed() {
	l.live.Store(true)
	l.p.wakeups.wakeAll()
}

// dispatch wakes the waiters a message is about.
func (l *listener) dispatch(m *redis.Message) {
	ns := l.p.opts.Namespace
	if m.Channel == l.p.channel {
		head, rk, ok := strings.Cut(m.Payload, "\n")
		if key, inNS := strings.CutPrefix(rk, ns); ok && inNS {
			l.p.wakeups.wakeHead(key, head)
		}
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
		l.p.wakeups.wakeHead(key, "")
	}
}
