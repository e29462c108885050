// Package pubsub is the project's one subscribe-and-confirm step for Redis pub/sub: lock events
// (events.Subscribe), keyspace notifications (the console) and the provider's wake-ups all open
// their subscription through Open, so each of them knows, when it returns, that every message
// published from then on reaches it.
package pubsub

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// Spec names what one connection subscribes to: channels (SUBSCRIBE) and patterns
// (PSUBSCRIBE). At least one of them must be given.
type Spec struct {
	Channels []string
	Patterns []string
}

func (s Spec) String() string {
	return fmt.Sprintf("channels %q, patterns %q", s.Channels, s.Patterns)
}

// Open subscribes one connection of client to spec and returns it once Redis confirmed every
// channel and pattern. It waits at most timeout for the confirmations (the connection's
// handshake included when the client honours context deadlines, as redisconn's clients do), so
// a server that accepts connections but never answers cannot hang the caller, and it stops
// waiting when ctx ends. On error the connection is closed.
//
// go-redis reconnects and subscribes again after a connection failure; messages published
// meanwhile are lost (pub/sub keeps nothing), and the new confirmations arrive as
// *redis.Subscription messages on the returned PubSub.
func Open(ctx context.Context, client redis.UniversalClient, spec Spec, timeout time.Duration) (*redis.PubSub, error) {
	want := len(spec.Channels) + len(spec.Patterns)
	if want == 0 {
		return nil, errors.New("pubsub: nothing to subscribe to")
	}
	confirmCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var ps *redis.PubSub
	if len(spec.Channels) > 0 {
		ps = client.Subscribe(confirmCtx, spec.Channels...)
	} else {
		ps = client.PSubscribe(confirmCtx, spec.Patterns...)
	}
	// go-redis cuts I/O at deadlines, not on cancellation: closing the PubSub is what ends a
	// wait for the confirmation when ctx ends first.
	interrupt := context.AfterFunc(ctx, func() { _ = ps.Close() })
	err := confirm(confirmCtx, ps, spec, want, timeout)
	if !interrupt() {
		err = fmt.Errorf("stopped while waiting for the confirmation: %w", context.Cause(ctx))
	}
	if err != nil {
		_ = ps.Close()
		var ne net.Error
		if (confirmCtx.Err() != nil || errors.As(err, &ne) && ne.Timeout()) && ctx.Err() == nil {
			err = fmt.Errorf("no confirmation from Redis within %s: %w", timeout, err)
		}
		return nil, fmt.Errorf("subscribe to %s: %w", spec, err)
	}
	return ps, nil
}

// confirm subscribes to the patterns that Open did not subscribe to yet and reads the
// confirmations, want in all.
func confirm(ctx context.Context, ps *redis.PubSub, spec Spec, want int, timeout time.Duration) error {
	if len(spec.Channels) > 0 && len(spec.Patterns) > 0 {
		if err := ps.PSubscribe(ctx, spec.Patterns...); err != nil {
			return err
		}
	}
	for got := 0; got < want; {
		msg, err := ps.ReceiveTimeout(ctx, timeout)
		if err != nil {
			return err
		}
		// A message published between two confirmations came before the subscription was
		// complete: it is not owed to the caller and is skipped.
		if _, ok := msg.(*redis.Subscription); ok {
			got++
		}
	}
	return nil
}
