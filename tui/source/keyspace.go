package source

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/internal/pubsub"
	"github.com/locktui/locktui/operator"
)

// Keyspace tuning.
const (
	// keyspaceMaxPending bounds the keys waiting for a targeted read; beyond it the console
	// stops collecting and asks for a full refresh instead.
	keyspaceMaxPending = 10000
	// keyspaceCoalesce is how long a targeted read waits for more notifications to batch (the
	// keyspace job's Delay).
	keyspaceCoalesce = 100 * time.Millisecond
	// KeyspaceReadBatch is the most keys one targeted read takes (two commands each).
	KeyspaceReadBatch = 500
	// SubscribeTimeout bounds the wait for Redis to confirm the keyspace subscription.
	SubscribeTimeout = 5 * time.Second
)

// subscribeTimeout is SubscribeTimeout; tests shorten it.
var subscribeTimeout = SubscribeTimeout

// Keyspace collects the keys named by keyspace notifications (PSUBSCRIBE
// __keyspace@<db>__:<namespace>*) until the console reads them. Pub/sub delivers at most once:
// when it may have lost notifications (more came than it holds, or go-redis reconnected the
// subscription, which drops what was published meanwhile) Take says a full refresh is due.
// Its one goroutine reads the subscription (Redis' pushes, unpaced) and ends with it.
type Keyspace struct {
	ps     *redis.PubSub
	prefix string // channel prefix to strip: "__keyspace@0__:" + namespace
	notify func()

	mu      sync.Mutex
	pending map[string]struct{}
	lost    bool // notifications may have been lost since the last Take
	done    chan struct{}
	closing sync.Once
}

// SubscribeKeyspace subscribes to the keyspace notifications of the namespace in db and
// returns once Redis confirmed, waiting at most SubscribeTimeout (the connection's handshake
// included when the client honours context deadlines) and no longer than ctx. notify (nil:
// none) is called whenever keys arrive or some may have been lost: the keyspace job passes its
// Trigger. Close it when done.
func (s *Source) SubscribeKeyspace(ctx context.Context, db int, notify func()) (*Keyspace, error) {
	prefix := "__keyspace@" + strconv.Itoa(db) + "__:"
	pattern := prefix + operator.LiteralPattern(s.ns) + "*"
	ps, err := pubsub.Open(ctx, s.client, pubsub.Spec{Patterns: []string{pattern}}, subscribeTimeout)
	if err != nil {
		return nil, err
	}
	k := &Keyspace{
		ps:      ps,
		prefix:  prefix + s.ns,
		notify:  notify,
		pending: map[string]struct{}{},
		done:    make(chan struct{}),
	}
	// With subscriptions: pubsub.Open consumed the first confirmation, so every *Subscription
	// that arrives is go-redis subscribing again after a reconnect.
	go k.run(ps.ChannelWithSubscriptions(redis.WithChannelSize(1024)))
	return k, nil
}

func (k *Keyspace) run(ch <-chan any) {
	defer close(k.done)
	for m := range ch {
		var key string
		lost := false
		switch msg := m.(type) {
		case *redis.Subscription:
			lost = true
		case *redis.Message:
			var ok bool
			if key, ok = strings.CutPrefix(msg.Channel, k.prefix); !ok {
				continue
			}
		default:
			continue
		}
		k.mu.Lock()
		switch {
		case lost:
			k.lost = true
		case len(k.pending) < keyspaceMaxPending:
			k.pending[key] = struct{}{}
		default:
			k.lost = true
		}
		k.mu.Unlock()
		if k.notify != nil {
			k.notify()
		}
	}
}

// Take returns up to max of the keys notified since the last call, without waiting; lost is
// true when notifications may have been lost since then: they came faster than the console
// reads them, or the subscription was reconnected. A full refresh is then due. When keys are
// left, it notifies again. It fails once the subscription ended and nothing is left.
func (k *Keyspace) Take(max int) (keys []string, lost bool, err error) {
	k.mu.Lock()
	for key := range k.pending {
		if len(keys) == max {
			break
		}
		keys = append(keys, key)
		delete(k.pending, key)
	}
	lost, k.lost = k.lost, false
	more := len(k.pending) > 0
	k.mu.Unlock()
	if more && k.notify != nil {
		k.notify()
	}
	if len(keys) == 0 && !lost {
		select {
		case <-k.done:
			return nil, false, fmt.Errorf("keyspace notifications: subscription closed")
		default:
		}
	}
	return keys, lost, nil
}

// Close unsubscribes and waits for the reader to end.
func (k *Keyspace) Close() {
	k.closing.Do(func() { _ = k.ps.Close() })
	<-k.done
}
