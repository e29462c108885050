//go:build unix

package e2e

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// releaseLimit is how soon the bridge must free the lease of a client that died: the issue's
// requirement, far below the lease's expiry.
const releaseLimit = 5 * time.Second

// TestKilledNodeClientFreesLeaseWithin5s kills (SIGKILL, no clean-up in Node) a bridge client
// whose execute job is running and checks that the bridge frees the lease within 5 s, although
// the lease would only expire after 60 s; another client (the CLI) then gets the key at once.
func TestKilledNodeClientFreesLeaseWithin5s(t *testing.T) {
	const key = "e2e:killed"
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	b := startBridge(t, srv.URL)
	victim := startWorker(t, "victim", backendBridge, srv.URL, b)
	awaitWorkers(t, victim)

	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	defer cancel()
	_, err := victim.send("hold", map[string]any{"key": key, "timeout": 10, "expire": 60})
	require.NoError(t, err)
	ev, err := victim.awaitEvent(ctx, "holding")
	require.NoError(t, err)
	require.Equal(t, key, ev.Key)

	redisKey := "medusa_lock:" + key
	owner, err := rdb.Get(ctx, redisKey).Result()
	require.NoError(t, err, "the key is held in Redis while the job runs")
	assert.True(t, strings.HasPrefix(owner, "execute:"), "owner %q is an execute owner", owner)
	ttl, err := rdb.TTL(ctx, redisKey).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 30*time.Second, "the lease lasts about 60 s, so only the bridge can free it in time")

	victim.p.signal(syscall.SIGKILL)
	killed := time.Now()
	require.Eventually(t, func() bool {
		n, err := rdb.Exists(ctx, redisKey).Result()
		return err == nil && n == 0
	}, releaseLimit, 20*time.Millisecond, "the lease of the killed client is still held %s after SIGKILL", releaseLimit)
	t.Logf("lease freed %s after SIGKILL", time.Since(killed).Round(time.Millisecond))
	<-victim.p.done

	// The key is free for everyone: another client takes it without waiting.
	r := locktui(ctx, t, srv.URL, "acquire", key, "--owner", "other", "--expire", "30s")
	require.Equal(t, 0, r.code, "locktui acquire after the kill: %s", r.stderr)
	assert.Equal(t, "other", rdb.Get(ctx, redisKey).Val())
}
