package bridge_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/bridge"
)

// A wait rides out a Redis that cannot be reached (a failover, a restart) within its timeout
// (docs/waiting.md); when Redis never answers, it ends as any wait does: stock's conflict. A
// call that does not wait gets Redis's error at once.
func TestWaitWhileRedisIsUnreachableEndsAtItsTimeout(t *testing.T) {
	h := start(t, withRedisOptions(t, func(o *redis.Options) { o.DialTimeout = time.Nanosecond }))
	c := h.dial(testToken)
	c.fail(req{"id": 1, "op": "lease", "keys": []string{"k"}, "timeout": 1}, "timed_out", "Timed-out acquiring lock.")
	c.fail(req{"id": 2, "op": "acquire", "keys": []string{"k"}, "owner": "o", "await_queue": true, "timeout": 1},
		"not_acquired", `Failed to acquire lock for key "k"`)
	f := c.fail(req{"id": 3, "op": "acquire", "keys": []string{"k"}, "owner": "o"}, "redis_error", "")
	require.Equal(t, "unexpected_state", f.Error.Type)
	require.Contains(t, f.Error.Message, "timeout", "the message says what failed")
}

// A queued acquire whose wait ends (here: cancelled) just as Redis answers with a reply error
// reports that error, not a conflict on some key.
func TestEndedQueuedAcquireReportsARedisReplyErrorAsItIs(t *testing.T) {
	h := start(t, stallable(t))
	c := h.dial(testToken)
	require.NoError(t, h.rdb.RPush(context.Background(), namespace+"list", "x").Err())
	c.warmUp()
	unpause := h.pauseWrites()
	c.send(req{"id": "q", "op": "acquire", "keys": []string{"a", "list"}, "owner": "o", "await_queue": true})
	h.awaitHeldCommands(1)
	require.Equal(t, req{"cancelled": true}, c.ok(req{"id": "c", "op": "cancel", "target": "q"}))
	unpause()
	f := c.recv()
	require.JSONEq(t, `"q"`, string(f.ID))
	requireError(t, f, "redis_error", "")
	require.Contains(t, f.Error.Message, "WRONGTYPE")
	require.Contains(t, f.Error.Message, `"list"`)
	require.Empty(t, h.owner("a"), "what the acquire took is given back")
}

// A lease_release that fails keeps the lease: the client may retry it.
func TestFailedLeaseReleaseCanBeRetried(t *testing.T) {
	h := start(t, stallable(t))
	c := h.dial(testToken)
	c.warmUpLeases(h)
	lease := c.ok(req{"id": 1, "op": "lease", "keys": []string{"k1", "k2"}})["lease"].(string)
	unpause := h.pauseWrites()
	c.send(req{"id": 2, "op": "lease_release", "lease": lease})
	h.awaitHeldCommands(1)
	h.killBridgeConns()
	f := c.recv()
	require.JSONEq(t, "2", string(f.ID))
	requireError(t, f, "redis_error", "")
	require.True(t, strings.HasPrefix(f.Error.Message, "release lease "), f.Error.Message)
	require.NotEmpty(t, h.owner("k1"), "the keys are still held")
	require.Equal(t, "1", h.metric(bridge.MetricLeasesHeld))

	unpause()
	require.Eventually(t, func() bool { return h.owner("k1") == "" && h.owner("k2") == "" }, eventually, tick,
		"the bridge retries the release in the background")
	require.Eventually(t, func() bool { return h.metric(bridge.MetricLeasesHeld) == "0" }, eventually, tick)
	require.Equal(t, req{"released": false}, c.ok(req{"id": 3, "op": "lease_release", "lease": lease}), "released already")
}
