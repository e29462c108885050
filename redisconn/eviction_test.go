package redisconn_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/redisconn"
)

func TestEvictionPolicyIsReadAndWarnedAbout(t *testing.T) {
	srv := redistest.Start(t)
	c, err := redisconn.Open(srv.URL, redisconn.TLSFiles{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	policy, err := redisconn.EvictionPolicy(context.Background(), c)
	require.NoError(t, err)
	require.Equal(t, redisconn.NoEviction, policy, "redis-server's default")
	require.Empty(t, redisconn.EvictionWarning(policy))

	require.NoError(t, c.ConfigSet(context.Background(), "maxmemory-policy", "allkeys-lru").Err())
	policy, err = redisconn.EvictionPolicy(context.Background(), c)
	require.NoError(t, err)
	require.Equal(t, "allkeys-lru", policy)
	require.Contains(t, redisconn.EvictionWarning(policy), "maxmemory-policy is allkeys-lru: under memory pressure Redis may evict held locks")
}
