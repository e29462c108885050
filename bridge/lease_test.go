package bridge_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/bridge"
	"github.com/locktui/locktui/provider"
)

// eventCounter counts the provider events the bridge reports, by kind and key.
type eventCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (e *eventCounter) LockEvent(ev provider.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.counts == nil {
		e.counts = map[string]int{}
	}
	e.counts[string(ev.Kind)+" "+ev.Key]++
}

func (e *eventCounter) count(kind provider.EventKind, key string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.counts[string(kind)+" "+key]
}

func TestLeaseIsRenewedBeyondItsExpire(t *testing.T) {
	events := &eventCounter{}
	h := start(t, func(c *bridge.Config) { c.Observer = events })
	c := h.dial(testToken)
	taken := time.Now()
	owner := c.ok(req{"id": 1, "op": "lease", "keys": []string{"k"}, "expire": 1})["owner"].(string)
	// Renewals come every 333 ms; after four of them the 1 s lease would long have expired.
	require.Eventually(t, func() bool { return events.count(provider.EventRenewed, "k") >= 4 }, eventually, tick)
	require.Greater(t, time.Since(taken), time.Second)
	require.Equal(t, owner, h.owner("k"))
	require.Equal(t, req{"released": true}, c.ok(req{"id": 2, "op": "lease_release", "lease": "L1"}))
	require.NotContains(t, []string{"", "0"}, h.metric(bridge.MetricRenewals))
}

func TestDroppedConnectionReleasesItsLeases(t *testing.T) {
	h := start(t)
	c := h.dial(testToken)
	owner := c.ok(req{"id": 1, "op": "lease", "keys": []string{"k1", "k2"}})["owner"].(string)
	c.ok(req{"id": 2, "op": "acquire", "keys": []string{"plain"}, "owner": "o", "expire": 60})
	require.Equal(t, owner, h.owner("k1"))
	require.Equal(t, "1", h.metric(bridge.MetricLeasesHeld))

	require.NoError(t, c.ws.NetConn().Close()) // as if the process was killed: no close frame
	require.Eventually(t, func() bool { return h.owner("k1") == "" && h.owner("k2") == "" }, eventually, tick)
	require.Equal(t, "o", h.owner("plain"), "plain locks are not tied to the connection")
	require.Eventually(t, func() bool {
		m := h.metrics()
		v1, _ := metricValue(m, bridge.MetricConnections)
		v2, _ := metricValue(m, bridge.MetricLeasesHeld)
		return v1 == "0" && v2 == "0"
	}, eventually, tick)
}

func TestSilentConnectionIsDroppedAndItsLeasesReleased(t *testing.T) {
	h := start(t, func(c *bridge.Config) { c.PingPeriod, c.PongWait = 50*time.Millisecond, 600*time.Millisecond })
	silent := h.dial(testToken)
	silent.ok(req{"id": 1, "op": "lease", "keys": []string{"silent"}})
	alive := h.dial(testToken)
	alive.ok(req{"id": 1, "op": "lease", "keys": []string{"alive"}})

	// The live client keeps reading, so it answers pings; the silent one reads nothing more.
	frames := make(chan []byte, 1)
	go func() {
		_ = alive.ws.SetReadDeadline(time.Now().Add(replyWait))
		_, data, err := alive.ws.ReadMessage()
		if err == nil {
			frames <- data
		}
		close(frames)
	}()
	require.Eventually(t, func() bool { return h.owner("silent") == "" }, eventually, tick)
	require.NotEmpty(t, h.owner("alive"))
	alive.send(req{"id": 2, "op": "ping"})
	var f frame
	require.NoError(t, json.Unmarshal(<-frames, &f))
	require.True(t, f.OK)
	require.JSONEq(t, "2", string(f.ID))
}

func TestLostLeaseIsPushed(t *testing.T) {
	h := start(t)
	c := h.dial(testToken)
	lease := c.ok(req{"id": 1, "op": "lease", "keys": []string{"k1", "k2"}, "expire": 1})["lease"].(string)
	require.NoError(t, h.rdb.Del(context.Background(), namespace+"k2").Err())

	f := c.recv()
	require.Equal(t, "lease_lost", f.Type)
	require.Nil(t, f.ID)
	require.Equal(t, lease, f.Lease)
	require.Equal(t, []string{"k2"}, f.Keys)
	requireError(t, f, "lock_lost", `Lost the lock for key(s) "k2" while the job was still running: the lease expired before it could be renewed. Increase "expire" if the job is expected to run this long.`)
	require.Equal(t, "conflict", f.Error.Type)

	require.Equal(t, req{"released": false}, c.ok(req{"id": 2, "op": "lease_release", "lease": lease}))
	require.Empty(t, h.owner("k1"), "lease_release frees the keys the lease still held")
	require.Equal(t, "1", h.metric(bridge.MetricLeasesLost))
	require.Equal(t, "0", h.metric(bridge.MetricLeasesHeld))
}
