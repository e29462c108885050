package bridge_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/bridge"
	"github.com/locktui/locktui/provider"
)

// Defect (issue 21): after a Redis failover, lease_lost said stock's "the lease expired before it
// could be renewed. Increase "expire"…", which sends the user the wrong way. A lease lost to a
// restart or failover says so, as `locktui run` does; the Node package shows the message as is.
func TestLeaseLostToARedisRestartSaysSo(t *testing.T) {
	events := &eventCounter{}
	h := start(t, func(c *bridge.Config) { c.Observer = events })
	c := h.dial(testToken)
	lease := c.ok(req{"id": 1, "op": "lease", "keys": []string{"k"}, "expire": 2})["lease"].(string)
	// A renewal comes 667 ms after the grant, after the first read of the server's run_id.
	require.Eventually(t, func() bool { return events.count(provider.EventRenewed, "k") >= 1 }, eventually, tick)
	h.redis.Restart(t, 0)

	require.NoError(t, c.ws.SetReadDeadline(time.Now().Add(replyWait)))
	f := c.recv()
	require.Equal(t, "lease_lost", f.Type)
	require.Equal(t, lease, f.Lease)
	requireError(t, f, "lock_lost", `Lost the lock for key(s) "k" while the job was still running: the Redis server restarted or failed over, which may have lost the keys.`)
}
