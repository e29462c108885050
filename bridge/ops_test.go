package bridge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type req = map[string]any

func TestAcquireAndRelease(t *testing.T) {
	h := start(t)
	c := h.dial(testToken)
	ctx := context.Background()

	taken := c.ok(req{"id": 1, "op": "acquire", "keys": []string{"b", "a"}, "owner": "o1", "expire": 9.5})
	tokens := taken["fencing_tokens"].(map[string]any)
	require.Len(t, tokens, 2)
	require.Equal(t, tokens["a"], taken["fencing_token"], "the first key's token stands for them all")
	require.Equal(t, "o1", h.owner("a"))
	ttl := h.rdb.TTL(ctx, namespace+"a").Val()
	require.Greater(t, ttl, 9*time.Second, "a fractional expire is rounded up")
	require.LessOrEqual(t, ttl, 10*time.Second)

	c.fail(req{"id": 2, "op": "acquire", "keys": []string{"c", "a"}, "owner": "o2"},
		"not_acquired", `Failed to acquire lock for key "a"`)
	require.Empty(t, h.owner("c"), "a failed acquire gives back what it took")
	require.Equal(t, "conflict", c.fail(req{"id": 3, "op": "acquire", "keys": []string{"a"}}, "not_acquired", "").Error.Type)

	require.Equal(t, req{"fencing_token": tokens["a"], "fencing_tokens": req{"a": tokens["a"]}},
		c.ok(req{"id": 4, "op": "acquire", "keys": []string{"a"}, "owner": "o1"}), "the same owner re-enters, in the same hold")
	require.Equal(t, time.Duration(-1), h.rdb.TTL(ctx, namespace+"a").Val(), "a re-acquire without expire clears the TTL")

	require.Positive(t, c.ok(req{"id": "anon", "op": "acquire", "keys": []string{"n"}, "owner": nil})["fencing_token"])
	require.Equal(t, "*", h.owner("n"), "a null owner is the anonymous owner")

	require.Equal(t, req{"released": false}, c.ok(req{"id": 5, "op": "release", "keys": []string{"a", "b"}, "owner": "o2"}))
	require.Equal(t, "o1", h.owner("a"))
	require.Equal(t, req{"released": true}, c.ok(req{"id": 6, "op": "release", "keys": []string{"a", "b"}, "owner": "o1"}))
	require.Empty(t, h.owner("a"))
	require.Equal(t, req{"released": false}, c.ok(req{"id": 7, "op": "release", "keys": []string{"a"}, "owner": "o1"}))

	c.ok(req{"id": 8, "op": "acquire", "keys": []string{"x", "y"}, "owner": "o3"})
	require.Equal(t, req{"count": float64(2)}, c.ok(req{"id": 9, "op": "release_all", "owner": "o3"}))
	require.Equal(t, req{"count": float64(1)}, c.ok(req{"id": 10, "op": "release_all"}), `release_all without owner frees "*" locks`)
	require.Empty(t, h.owner("n"))
	require.Equal(t, req{"leases": req{}}, c.ok(req{"id": 11, "op": "ping"}))
}

func TestQueuedAcquireTimesOutAndIsCancellable(t *testing.T) {
	h := start(t)
	c := h.dial(testToken)
	require.NoError(t, h.rdb.Set(context.Background(), namespace+"busy", "someone", 0).Err())

	c.fail(req{"id": 1, "op": "acquire", "keys": []string{"free", "busy"}, "owner": "o", "await_queue": true, "timeout": 0.2},
		"not_acquired", `Failed to acquire lock for key "busy"`)
	require.Empty(t, h.owner("free"), "a timed-out queued acquire gives back what it took")

	c.send(req{"id": "q", "op": "acquire", "keys": []string{"busy"}, "owner": "o", "await_queue": true})
	c.send(req{"id": "l", "op": "lease", "keys": []string{"busy"}, "timeout": 60})
	require.Equal(t, req{"cancelled": false}, c.ok(req{"id": "c0", "op": "cancel", "target": "nothing"}))
	c.send(req{"id": "c1", "op": "cancel", "target": "q"})
	c.send(req{"id": "c2", "op": "cancel", "target": "l"})
	got := map[string]frame{}
	for range 4 {
		f := c.recv()
		got[string(f.ID)] = f
	}
	require.Equal(t, req{"cancelled": true}, got[`"c1"`].Result)
	require.Equal(t, req{"cancelled": true}, got[`"c2"`].Result)
	requireError(t, got[`"q"`], "not_acquired", `Failed to acquire lock for key "busy"`)
	requireError(t, got[`"l"`], "timed_out", "Timed-out acquiring lock.")
	require.Equal(t, "someone", h.owner("busy"))
}

func TestLeaseAndLeaseRelease(t *testing.T) {
	h := start(t)
	c := h.dial(testToken)
	res := c.ok(req{"id": 1, "op": "lease", "keys": []string{"k2", "k1", "k1"}, "expire": 30})
	lease, owner := res["lease"].(string), res["owner"].(string)
	require.NotEmpty(t, lease)
	require.Regexp(t, `^execute:[0-9a-f-]{36}$`, owner)
	require.Equal(t, `Lost the lock for key(s) "k2", "k1" while the job was still running: the lease expired before it could be renewed. Increase "expire" if the job is expected to run this long.`,
		res["lost_message"], "the grant carries stock's message for the loss of every key, in the order sent, once each")
	require.Equal(t, owner, h.owner("k1"))
	require.Equal(t, owner, h.owner("k2"))
	require.Greater(t, h.rdb.TTL(context.Background(), namespace+"k1").Val(), 29*time.Second)

	other := h.dial(testToken)
	other.fail(req{"id": 1, "op": "lease", "keys": []string{"k1"}, "timeout": 0.2}, "timed_out", "Timed-out acquiring lock.")
	other.fail(req{"id": 2, "op": "lease_release", "lease": lease}, "unknown_lease",
		fmt.Sprintf("no lease %q on this connection", lease))

	require.Equal(t, req{"released": true}, c.ok(req{"id": 2, "op": "lease_release", "lease": lease}))
	require.Empty(t, h.owner("k1"))
	require.Empty(t, h.owner("k2"))
	require.Equal(t, req{"released": false}, c.ok(req{"id": 3, "op": "lease_release", "lease": lease}), "released already")
	require.Equal(t, "not_found", c.fail(req{"id": 4, "op": "lease_release", "lease": "L99"}, "unknown_lease", "").Error.Type)
}

func TestOwnerPrefixRestrictsNamedOwners(t *testing.T) {
	h := start(t)
	c := h.dial(restrictedToken)
	c.ok(req{"id": 1, "op": "acquire", "keys": []string{"a"}, "owner": "svc-a:worker"})
	c.fail(req{"id": 2, "op": "acquire", "keys": []string{"b"}, "owner": "svc-b:worker"}, "owner_forbidden",
		`owner "svc-b:worker" is not allowed for this token: owners must start with "svc-a:"`)
	c.fail(req{"id": 3, "op": "acquire", "keys": []string{"b"}}, "owner_forbidden",
		`owner "*" is not allowed for this token: owners must start with "svc-a:"`)
	require.Equal(t, "not_allowed", c.fail(req{"id": 4, "op": "release", "keys": []string{"a"}, "owner": "x"}, "owner_forbidden", "").Error.Type)
	c.fail(req{"id": 5, "op": "release_all", "owner": nil}, "owner_forbidden", "")
	require.Equal(t, req{"count": float64(1)}, c.ok(req{"id": 6, "op": "release_all", "owner": "svc-a:worker"}))
	res := c.ok(req{"id": 7, "op": "lease", "keys": []string{"b"}})
	require.True(t, strings.HasPrefix(res["owner"].(string), ownerPrefix+"execute:"), "a lease's owner has the prefix")
	c.fail(req{"id": 8, "op": "settle", "keys": []string{"a"}, "owner": "x", "claim": "c1"}, "owner_forbidden", "")
	require.Empty(t, h.owner("c"))
}

func TestOneConnectionMultiplexesRequests(t *testing.T) {
	const n = 50
	h := start(t)
	c := h.dial(testToken)
	require.NoError(t, h.rdb.Set(context.Background(), namespace+"busy", "someone", 0).Err())

	c.send(req{"id": 0, "op": "acquire", "keys": []string{"busy"}, "owner": "w", "await_queue": true})
	c.fail(req{"id": 0, "op": "ping"}, "duplicate_id", "id 0 is already in flight on this connection")
	for i := 1; i <= n; i++ {
		if i%2 == 0 {
			c.send(req{"id": i, "op": "ping"})
		} else {
			c.send(req{"id": i, "op": "acquire", "keys": []string{fmt.Sprint("k", i)}, "owner": "w", "expire": 30})
		}
	}
	seen := map[int]bool{}
	for range n {
		f := c.recv()
		var id int
		require.NoError(t, json.Unmarshal(f.ID, &id))
		require.True(t, f.OK, "request %d: %+v", id, f.Error)
		require.NotZero(t, id, "the blocked acquire must not be answered while its key is held")
		require.False(t, seen[id], "request %d answered twice", id)
		seen[id] = true
	}
	require.Len(t, seen, n)
	require.Equal(t, "w", h.owner("k49"))

	require.NoError(t, h.rdb.Del(context.Background(), namespace+"busy").Err())
	f := c.recv()
	require.JSONEq(t, "0", string(f.ID))
	require.True(t, f.OK)
	require.Equal(t, "w", h.owner("busy"))
}
