package tui

import (
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// The demo falls back to miniredis, which lacks CONFIG GET and most of INFO: the console must
// still show the locks, with keyspace notifications off.
func TestConsoleOnMiniredis(t *testing.T) {
	mr := miniredis.RunT(t)
	client := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer client.Close()
	require.NoError(t, client.Set(t.Context(), "medusa_lock:cart:1", "owner-a", time.Minute).Err())
	require.NoError(t, client.Set(t.Context(), "medusa_lock:stuck", "*", 0).Err())
	c := startConsole(t, Config{Client: client, URL: "redis://" + mr.Addr()})
	c.await("cart:1", "NO TTL", "2 locks", "poll 1s")
	c.quit()
}
