package pubsub_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/locktui/locktui/internal/pubsub"
	"github.com/locktui/locktui/internal/testsupport/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Once Open returns, every message published on its channels and patterns is received.
func TestOpenConfirmsChannelsAndPatterns(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ps, err := pubsub.Open(t.Context(), rdb, pubsub.Spec{Channels: []string{"c1", "c2"}, Patterns: []string{"p:*"}}, 5*time.Second)
	require.NoError(t, err)
	defer ps.Close()
	for _, ch := range []string{"c1", "c2", "p:x"} {
		require.NoError(t, rdb.Publish(t.Context(), ch, "hello").Err())
		msg, err := ps.ReceiveTimeout(t.Context(), 5*time.Second)
		require.NoError(t, err)
		m, ok := msg.(*redis.Message)
		require.True(t, ok, "got %T", msg)
		require.Equal(t, ch, m.Channel)
	}
}

// A server that accepts connections but never answers makes Open fail within its timeout.
func TestOpenTimesOutOnASilentServer(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Silent(t), MaxRetries: -1,
		ContextTimeoutEnabled: true, DialTimeout: time.Second})
	t.Cleanup(func() { _ = rdb.Close() })
	_, err := pubsub.Open(t.Context(), rdb, pubsub.Spec{Channels: []string{"c"}}, 200*time.Millisecond)
	require.ErrorContains(t, err, "no confirmation from Redis within 200ms")
}

// Nothing to subscribe to is a caller's mistake.
func TestOpenNeedsAChannelOrPattern(t *testing.T) {
	_, err := pubsub.Open(t.Context(), nil, pubsub.Spec{}, time.Second)
	require.Error(t, err)
}
