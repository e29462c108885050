package bench_test

import (
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/bench"
)

func TestStartRedisServesOnLoopbackUntilStopped(t *testing.T) {
	srv, err := bench.StartRedis(t.Context())
	require.NoError(t, err)
	assert.Regexp(t, `^redis://127\.0\.0\.1:\d+$`, srv.URL)
	assert.NotEqual(t, "127.0.0.1:6379", srv.Addr)
	assert.DirExists(t, srv.Dir)

	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	defer c.Close()
	require.NoError(t, c.Ping(t.Context()).Err())

	srv.Stop()
	srv.Stop() // idempotent
	assert.Error(t, c.Ping(t.Context()).Err(), "server still answers after Stop")
	_, err = os.Stat(srv.Dir)
	assert.True(t, os.IsNotExist(err), "Stop left %s behind", srv.Dir)
}
