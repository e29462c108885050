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
	// keyspaceCoalesce is how long a targeted read waits for more notifications to batch.
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
// subscription, which drops what was published meanwhile) Next says a full refresh is due.
type Keyspace struct {
	ps     *redis.PubSub
	prefix string // channel prefix to strip: "__keyspace@0__:" + namespace

	mu      sync.Mutex
	pending map[string]struct{}
	lost    bool // notifications may have been lost since the last Next
	wake    chan struct{}
	done    chan struct{}
	closing sync.Once
}

// SubscribeKeyspace subscribes to the keyspace notifications of the namespace in db and
// returns once Redis confirmed, waiting at most SubscribeTimeout (the connection's handshake
// included when the client honours context deadlines) and no longer than ctx. Close it when
// done.
func (s *Source) SubscribeKeyspace(ctx context.Context, db int) (*Keyspace, error) {
	prefix := "__keyspace@" + strconv.Itoa(db) + "__:"
	pattern := prefix + operator.LiteralPattern(s.ns) + "*"
	ps, err := pubsub.Open(ctx, s.client, pubsub.Spec{Patterns: []string{pattern}}, subscribeTimeout)
	if err != nil {
		return nil, err
	}
	k := &Keyspace{
		ps:      ps,
		prefix:  prefix + s.ns,
		pending: map[string]struct{}{},
		wake:    make(chan struct{}, 1),
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
		select {
		case k.wake <- struct{}{}:
		default:
		}
	}
}

// Next waits until some keys were notified or notifications may have been lost (or ctx
// ends), lets more notifications gather for a moment, and returns up to max of the keys.
// lost is true when notifications may have been lost since the last call: they came faster
// than the console reads them, or the subscription was reconnected. A full refresh is then
// due.
func (k *Keyspace) Next(ctx context.Context, max int) (keys []string, lost bool, err error) {
	for {
		k.mu.Lock()
		n, lost := len(k.pending), k.lost
		k.mu.Unlock()
		if n > 0 || lost {
			break
		}
		select {
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-k.done:
			return nil, false, fmt.Errorf("keyspace notifications: subscription closed")
		case <-k.wake:
		}
	}
	t := time.NewTimer(keyspaceCoalesce)
	select {
	case <-ctx.Done():
		t.Stop()
		return nil, false, ctx.Err()
	case <-t.C:
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for key := range k.pending {
		if len(keys) == max {
			break
		}
		keys = append(keys, key)
		delete(k.pending, key)
	}
	lost, k.lost = k.lost, false
	return keys, lost, nil
}

// Close unsubscribes and waits for the reader to end.
func (k *Keyspace) Close() {
	k.closing.Do(func() { _ = k.ps.Close() })
	<-k.done
}
