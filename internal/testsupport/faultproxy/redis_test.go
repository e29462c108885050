package faultproxy_test

import (
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/testsupport/faultproxy"
	"github.com/locktui/locktui/internal/testsupport/redistest"
)

// proxiedRedis starts a private redis-server and a proxy in front of it, and returns a direct
// client and one through the proxy. The proxied client does not retry, so a lost reply is an
// error the test sees.
func proxiedRedis(t *testing.T) (p *faultproxy.Proxy, direct, proxied *redis.Client) {
	t.Helper()
	srv := redistest.Start(t)
	p = faultproxy.StartT(t, srv.Addr)
	proxied = redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1, PoolSize: 1})
	t.Cleanup(func() { _ = proxied.Close() })
	require.NoError(t, proxied.Ping(t.Context()).Err())
	return p, srv.Client(t), proxied
}

func TestLoseReplyToGetWithGoRedis(t *testing.T) {
	p, direct, proxied := proxiedRedis(t)
	ctx := t.Context()
	require.NoError(t, direct.Set(ctx, "lost-key", "v", 0).Err())

	held := make(chan struct{}, 1)
	p.LoseReplyTo([]byte("lost-key"), func() { held <- struct{}{} })
	err := proxied.Get(ctx, "lost-key").Err()
	require.Error(t, err, "go-redis must see the lost reply")
	require.NotErrorIs(t, err, redis.Nil)
	require.Len(t, held, 1, "hold ran")
	require.Equal(t, 1, p.LostReplies())

	got, err := proxied.Get(ctx, "lost-key").Result() // a new connection; once only
	require.NoError(t, err)
	require.Equal(t, "v", got)
	require.Equal(t, 1, p.LostReplies())
}

func TestLoseReplyToLosesTheReplyNotTheRequest(t *testing.T) {
	p, direct, proxied := proxiedRedis(t)
	ctx := t.Context()

	p.LoseReplyTo([]byte("counter"), nil)
	require.Error(t, proxied.Incr(ctx, "counter").Err())
	n, err := direct.Get(ctx, "counter").Int()
	require.NoError(t, err)
	require.Equal(t, 1, n, "Redis ran the command once")
	require.Equal(t, 1, p.LostReplies())
}

func TestRedisThroughDelayAndBlackhole(t *testing.T) {
	const d = 100 * time.Millisecond
	p, direct, proxied := proxiedRedis(t)
	ctx := t.Context()

	p.Delay(faultproxy.Downstream, d)
	start := time.Now()
	require.NoError(t, proxied.Set(ctx, "k", "1", 0).Err())
	require.GreaterOrEqual(t, time.Since(start), d)

	p.Blackhole(faultproxy.Downstream)
	short, err := proxied.WithTimeout(silence).Set(ctx, "k", "2", 0).Result()
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "a silent Redis: the read times out (got %q)", short)
	got, err := direct.Get(ctx, "k").Result()
	require.NoError(t, err)
	require.Equal(t, "2", got, "the request reached Redis")
}
