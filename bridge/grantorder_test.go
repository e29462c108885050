package bridge_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/bridge"
	"github.com/locktui/locktui/provider"
)

// Defect (issue 21, seen in a Sentinel failover): a lease lost as it was granted had its
// lease_lost written before its grant, because the watcher started before the grant was
// queued. A client drops an event for a lease it does not know yet, then reads the grant and
// believes on while another process holds the key. The grant now always goes first, and a
// lease already lost when its grant is written is valid for no time (valid_ms 0).
func TestLeaseLostBeforeItsGrantIsWrittenIsToldAfterTheGrant(t *testing.T) {
	h := start(t)
	granted := make(chan *provider.Lease, 1)
	read := make(chan struct{}) // closed once the client read its first frame
	bridge.HoldGrants(t, func(l *provider.Lease) {
		granted <- l
		select {
		case <-l.Done(): // lost at its first renewal, a third of its 2 s expire later
		case <-t.Context().Done():
		}
		// Whatever the bridge writes about the lease now goes out before the grant: wait for
		// the client to read it, for a while (the grant itself cannot go out before this returns).
		select {
		case <-read:
		case <-time.After(time.Second):
		}
	})
	c := h.dial(testToken)
	c.send(req{"id": 1, "op": "lease", "keys": []string{"k1", "k2"}, "expire": 2})
	l := <-granted
	require.NoError(t, h.rdb.Del(context.Background(), namespace+"k2").Err())

	grant := c.recv()
	close(read)
	require.Empty(t, grant.Type, "the grant is written before anything about the lease, not a %q event", grant.Type)
	require.JSONEq(t, "1", string(grant.ID))
	require.True(t, grant.OK, "%+v", grant.Error)
	require.EqualValues(t, 0, grant.Result["valid_ms"], "a lease lost before its grant was written is valid for no time")
	lost := c.recv()
	require.Equal(t, "lease_lost", lost.Type)
	require.Equal(t, grant.Result["lease"], lost.Lease)
	require.Equal(t, []string{"k2"}, lost.Keys)
	require.ErrorIs(t, l.Err(), provider.ErrLockLost)

	require.Equal(t, req{"released": false}, c.ok(req{"id": 2, "op": "lease_release", "lease": lost.Lease}))
	require.Empty(t, h.owner("k1"), "the acknowledgement frees what the lost lease still held")
}

// Defect (found by the Sentinel failover test): a client counts a lease's validity from the
// send time of its request, so a lease that waited longer than its valid_ms arrived past its
// deadline and was given back, and one that waited nearly as long was lost a moment after its
// job started. The grant says how long the bridge held the request (waited_ms), never more
// than the time between the request's send and the grant.
func TestLeaseGrantSaysHowLongItWaited(t *testing.T) {
	h := start(t)
	c := h.dial(testToken)
	c.ok(req{"id": 1, "op": "acquire", "keys": []string{"k"}, "owner": "other", "expire": 1})
	sent := time.Now()
	grant := c.ok(req{"id": 2, "op": "lease", "keys": []string{"k"}, "expire": 2, "timeout": 5})
	received := time.Since(sent)
	waited := time.Duration(grant["waited_ms"].(float64)) * time.Millisecond
	require.Greater(t, waited, 500*time.Millisecond, "the lease waited for the other owner's lock to expire (1 s)")
	require.LessOrEqual(t, waited, received)
	require.Greater(t, grant["valid_ms"].(float64), 1000.0)
}
