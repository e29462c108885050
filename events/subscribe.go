package events

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/internal/backoff"
	"github.com/locktui/locktui/internal/pubsub"
)

// Subscription tuning.
const (
	// SubscriptionBuffer is the capacity of C; an event that finds it full is dropped and
	// counted (Dropped), so a slow reader never makes Redis disconnect the subscriber.
	SubscriptionBuffer = 1024
	// pingInterval is how long the subscriber waits for a message before it pings the server,
	// so a connection that died silently is noticed and replaced.
	pingInterval = 30 * time.Second
	// retryMin and retryMax bound the wait between attempts to reconnect.
	retryMin = 100 * time.Millisecond
	retryMax = 5 * time.Second
)

// SubscribeTimeout bounds how long Subscribe waits for Redis to confirm the subscription (the
// connection's handshake included when the client honours context deadlines, as redisconn's
// clients do), so a server that accepts connections but never answers cannot hang the caller.
const SubscribeTimeout = 5 * time.Second

// subscribeTimeout is SubscribeTimeout; tests shorten it.
var subscribeTimeout = SubscribeTimeout

// Subscription receives the lock events of one namespace. go-redis reconnects and subscribes
// again after a connection failure; events published meanwhile are lost (pub/sub keeps nothing).
type Subscription struct {
	ps      *redis.PubSub
	channel string
	c       chan Event
	stop    chan struct{}
	done    chan struct{}

	closeOnce sync.Once
	stopAfter func() bool

	malformed atomic.Uint64
	dropped   atomic.Uint64
	lastErr   atomic.Pointer[error]
}

// Subscribe subscribes to namespace's channel (ChannelFor) and returns once Redis confirmed the
// subscription, so every event published after it returns is received. It waits at most
// SubscribeTimeout for the confirmation, and stops waiting when ctx ends. C is closed when ctx
// ends or Close is called. Malformed messages are skipped and counted (Malformed).
func Subscribe(ctx context.Context, client redis.UniversalClient, namespace string) (*Subscription, error) {
	channel := ChannelFor(namespace)
	ps, err := pubsub.Open(ctx, client, pubsub.Spec{Channels: []string{channel}}, subscribeTimeout)
	if err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	s := &Subscription{
		ps:      ps,
		channel: channel,
		c:       make(chan Event, SubscriptionBuffer),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	go s.run()
	s.stopAfter = context.AfterFunc(ctx, s.shutdown)
	return s, nil
}

// C returns the events, in the order Redis delivered them. It is closed when the
// Subscription ends.
func (s *Subscription) C() <-chan Event { return s.c }

// Channel returns the pub/sub channel subscribed to.
func (s *Subscription) Channel() string { return s.channel }

// Malformed returns how many messages were skipped because they were not valid events.
func (s *Subscription) Malformed() uint64 { return s.malformed.Load() }

// Dropped returns how many events were dropped because C was full.
func (s *Subscription) Dropped() uint64 { return s.dropped.Load() }

// Err returns the last receive error while the connection is down (go-redis is reconnecting),
// or nil while it works.
func (s *Subscription) Err() error {
	if e := s.lastErr.Load(); e != nil {
		return *e
	}
	return nil
}

// Close unsubscribes, closes the connection and waits until C is closed. It is safe to call
// more than once and from any goroutine.
func (s *Subscription) Close() error {
	s.stopAfter()
	s.shutdown()
	<-s.done
	return nil
}

// shutdown stops the reader: it is what Close does and what happens when Subscribe's ctx ends.
func (s *Subscription) shutdown() {
	s.closeOnce.Do(func() {
		close(s.stop)
		_ = s.ps.Close() // unblocks a pending receive
	})
}

// run reads messages until Close.
func (s *Subscription) run() {
	defer close(s.done)
	defer close(s.c)
	ctx := context.Background() // receives are ended by closing the connection, not by ctx
	retry := backoff.Doubling(retryMin, retryMax)
	for {
		msg, err := s.ps.ReceiveTimeout(ctx, pingInterval)
		if s.stopped() {
			return
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				_ = s.ps.Ping(ctx) // a dead connection fails here and is replaced
				continue
			}
			wrapped := fmt.Errorf("events: receive on %q: %w", s.channel, err)
			s.lastErr.Store(&wrapped)
			if !s.sleep(retry.Next()) {
				return
			}
			continue
		}
		retry.Reset()
		s.lastErr.Store(nil)
		m, ok := msg.(*redis.Message)
		if !ok {
			continue // subscription confirmations and pongs
		}
		ev, err := Decode([]byte(m.Payload))
		if err != nil {
			s.malformed.Add(1)
			continue
		}
		select {
		case s.c <- ev:
		default:
			s.dropped.Add(1)
		}
	}
}

func (s *Subscription) stopped() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

// sleep waits d or until Close; it reports false on Close.
func (s *Subscription) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.stop:
		return false
	case <-t.C:
		return true
	}
}
