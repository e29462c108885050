package bridge_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/bridge"
)

// fairQueue starts a bridge with the fair queue on.
func fairQueue(c *bridge.Config) { c.FairQueue = true }

// With the fair queue, waiting requests that one client sends for the same key are granted in
// the order sent: each joins the queue only after the one before it did.
func TestOneClientsWaitsAreGrantedInOrderSent(t *testing.T) {
	h := start(t, fairQueue)
	c := h.dial(testToken)
	for round := range 10 {
		key := fmt.Sprintf("k%d", round)
		first := 3*round + 1
		for i := range 3 {
			c.send(req{"id": first + i, "op": "lease", "keys": []string{key}, "timeout": 5})
		}
		for i := range 3 {
			// The next grant, skipping the reply to the previous lease_release.
			var f frame
			for {
				f = c.recv()
				if f.Result["lease"] != nil || !f.OK {
					break
				}
			}
			require.True(t, f.OK, "round %d: %+v", round, f.Error)
			var id int
			require.NoError(t, json.Unmarshal(f.ID, &id))
			require.Equal(t, first+i, id, "round %d: granted out of the order sent", round)
			c.send(req{"id": fmt.Sprintf("r%d-%d", round, i), "op": "lease_release", "lease": f.Result["lease"]})
		}
		require.True(t, c.recv().OK) // the last lease_release
	}
}

// Without the fair queue too, the first of several waiting requests one client sends for a free
// key wins, as Medusa's upstream test "release lock in case of timeout failure" expects of
// three execute calls on one key (each request runs in a goroutine of its own, so without the
// order the second would win about a third of the time).
func TestFirstOfOneClientsWaitsWins(t *testing.T) {
	h := start(t)
	c := h.dial(testToken)
	for round := range 20 {
		key := fmt.Sprintf("k%d", round)
		first := 3*round + 1
		for i := range 3 {
			c.send(req{"id": first + i, "op": "lease", "keys": []string{key}, "timeout": 5})
		}
		requireFirstGranted(t, c, round, 3, first)
		require.True(t, c.recv().OK) // the last lease_release
	}
}

// A queued acquire behind a lease of the same connection on the same key waits its turn, and
// one on another key does not.
func TestOrderIsPerKey(t *testing.T) {
	h := start(t, fairQueue)
	c := h.dial(testToken)
	require.NoError(t, h.rdb.Set(t.Context(), namespace+"held", "someone", 0).Err())
	c.send(req{"id": 1, "op": "lease", "keys": []string{"held"}, "timeout": 30})
	c.send(req{"id": 2, "op": "acquire", "keys": []string{"held"}, "owner": "o2", "await_queue": true})
	// Not held up by the two waits on "held".
	require.Contains(t, c.ok(req{"id": 3, "op": "acquire", "keys": []string{"free"}, "owner": "o3",
		"await_queue": true}), "fencing_token")
	require.NoError(t, h.rdb.Del(t.Context(), namespace+"held").Err())
	f := c.recv()
	require.True(t, f.OK, "%+v", f.Error)
	require.JSONEq(t, "1", string(f.ID), "the lease, sent first, is granted first")
	c.send(req{"id": 4, "op": "lease_release", "lease": f.Result["lease"]})
	for range 2 {
		f = c.recv()
		require.True(t, f.OK, "%+v", f.Error)
	}
	require.Equal(t, "o2", h.owner("held"))
}

// Two overlapping queued acquires of one owner on one connection never leave a key behind:
// the second starts only when the first is done, so it cannot re-enter the first one's key
// and put it back with its give-back after both failed (found in review).
func TestOverlappingSameOwnerWaitsLeaveNothingBehind(t *testing.T) {
	h := start(t)
	c := h.dial(testToken)
	require.NoError(t, h.rdb.Set(t.Context(), namespace+"b", "someone", 0).Err())
	require.NoError(t, h.rdb.Set(t.Context(), namespace+"c", "someone", 0).Err())
	c.send(req{"id": 1, "op": "acquire", "keys": []string{"a", "b"}, "owner": "o", "await_queue": true, "timeout": 0.5})
	c.send(req{"id": 2, "op": "acquire", "keys": []string{"a", "c"}, "owner": "o", "await_queue": true, "timeout": 1})
	for range 2 {
		f := c.recv()
		require.False(t, f.OK, "%+v", f)
	}
	require.Equal(t, "", h.owner("a"), "both acquires failed, yet a is held (TTL %v)",
		h.rdb.TTL(t.Context(), namespace+"a").Val())
}

// With the fair queue, a lease whose first attempt took its first key but found a later one
// held keeps its place: the next request of the connection starts only once the first is in
// that key's queue (found in review).
func TestMultiKeyLeaseKeepsItsPlaceInTheQueue(t *testing.T) {
	h := start(t, fairQueue)
	c := h.dial(testToken)
	for round := range 5 {
		a, b, z := fmt.Sprintf("a%d", round), fmt.Sprintf("b%d", round), fmt.Sprintf("c%d", round)
		require.NoError(t, h.rdb.Set(t.Context(), namespace+b, "someone", 0).Err())
		first := 2*round + 1
		c.send(req{"id": first, "op": "lease", "keys": []string{a, b, z}, "timeout": 10})
		c.send(req{"id": first + 1, "op": "lease", "keys": []string{b}, "timeout": 10})
		queue := "locktui:{" + namespace + b + "}:queue"
		require.Eventually(t, func() bool { return h.rdb.LLen(t.Context(), queue).Val() == 2 }, 5*time.Second, time.Millisecond)
		require.NoError(t, h.rdb.Del(t.Context(), namespace+b).Err())
		requireFirstGranted(t, c, round, 2, first)
		require.True(t, c.recv().OK) // the last lease_release
	}
}

// requireFirstGranted receives the grants of n leases of one round, releasing each as it comes,
// and requires the first grant to be request first's.
func requireFirstGranted(t *testing.T, c *client, round, n, first int) {
	t.Helper()
	for granted := 0; granted < n; {
		f := c.recv()
		require.True(t, f.OK, "round %d: %+v", round, f.Error)
		if f.Result["lease"] == nil {
			continue // the reply to a lease_release
		}
		if granted == 0 {
			var id int
			require.NoError(t, json.Unmarshal(f.ID, &id))
			require.Equal(t, first, id, "round %d: a later request was granted before the first sent", round)
		}
		granted++
		c.send(req{"id": fmt.Sprintf("r%d-%d", round, granted), "op": "lease_release", "lease": f.Result["lease"]})
	}
}

// A request sent right after a lease_release, before its reply, finds the lease's keys
// released: the release goes first, so that a client's execute may resolve once its release is
// sent. A plain acquire (which fails at once on a held key) and a lease both get the key.
func TestRequestsAfterALeaseReleaseFindItsKeysReleased(t *testing.T) {
	h := start(t)
	c := h.dial(testToken)
	for round := range 20 {
		key := fmt.Sprintf("k%d", round)
		for _, next := range []req{
			{"id": "next", "op": "acquire", "keys": []string{key}, "owner": "o"},
			{"id": "next", "op": "lease", "keys": []string{key}, "timeout": 5},
		} {
			grant := c.ok(req{"id": "lease", "op": "lease", "keys": []string{key}, "timeout": 5})
			c.send(req{"id": "release", "op": "lease_release", "lease": grant["lease"]})
			c.send(next)
			replies := map[string]frame{}
			for range 2 {
				f := c.recv()
				var id string
				require.NoError(t, json.Unmarshal(f.ID, &id))
				replies[id] = f
			}
			require.True(t, replies["next"].OK, "round %d: %s after a lease_release: %+v", round, next["op"], replies["next"].Error)
			require.True(t, replies["release"].OK, "round %d: %+v", round, replies["release"].Error)
			require.Equal(t, true, replies["release"].Result["released"], "round %d", round)
			if next["op"] == "acquire" {
				c.ok(req{"id": "give-back", "op": "release", "keys": []string{key}, "owner": "o"})
			} else {
				c.ok(req{"id": "give-back", "op": "lease_release", "lease": replies["next"].Result["lease"]})
			}
		}
	}
}
