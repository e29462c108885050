package bridge_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/bridge"
)

// Defects: a client whose connection broke re-sent its release (deleting a lock another process
// of the same owner took meanwhile), and an anonymous acquire whose reply was lost left a lock
// without expiry while the caller's call failed. With resume, the client learns what became of
// every request it had in flight, and re-sends nothing blindly.
func TestResumeTellsWhatBecameOfTheRequestsInFlight(t *testing.T) {
	h := start(t, stallable(t))
	c := h.dial(testToken)
	c.warmUp()
	require.NoError(t, h.rdb.Set(context.Background(), namespace+"mine", "*", 0).Err())
	unpause := h.pauseWrites()
	c.send(req{"id": 1, "op": "acquire", "keys": []string{"anon"}})
	c.send(req{"id": 2, "op": "release", "keys": []string{"mine"}})
	h.awaitHeldCommands(2)
	require.NoError(t, c.ws.NetConn().Close()) // the replies go nowhere
	unpause()

	n := h.dial(testToken)
	res := n.ok(req{"id": 10, "op": "resume", "session": c.welcome.Session, "ids": []any{1, 2, 3}})
	require.Equal(t, true, res["known"])
	outcomes := res["outcomes"].([]any)
	token := outcomes[0].(req)["reply"].(req)["result"].(req)["fencing_token"]
	require.Positive(t, token, "the acquire's reply, as it was sent")
	require.Equal(t, []any{
		req{"id": float64(1), "state": "replied", "reply": req{"ok": true, "result": req{"fencing_token": token, "fencing_tokens": req{"anon": token}}}},
		req{"id": float64(2), "state": "replied", "reply": req{"ok": true, "result": req{"released": true}}},
		req{"id": float64(3), "state": "not_received"},
	}, res["outcomes"])
	require.Equal(t, "*", h.owner("anon"), "the caller learns that it holds the key")
	require.Equal(t, req{"known": false}, n.ok(req{"id": 11, "op": "resume", "session": c.welcome.Session, "ids": []any{1}}),
		"a session is resumed once")
}

// A resume ends the old connection if the bridge still thinks it open (a half-open link): its
// waits are cancelled and its leases freed at once, since the client holds none of them.
func TestResumeEndsTheOldConnectionAndFreesItsLeasesAtOnce(t *testing.T) {
	h := start(t, func(c *bridge.Config) { c.ClientTimeout = time.Minute })
	old := h.dial(testToken)
	old.ok(req{"id": 1, "op": "lease", "keys": []string{"held"}})
	require.NoError(t, h.rdb.Set(context.Background(), namespace+"busy", "someone", 0).Err())
	old.send(req{"id": 2, "op": "acquire", "keys": []string{"busy"}, "owner": "o", "await_queue": true})
	old.ok(req{"id": 3, "op": "ping"}) // the wait is in flight

	n := h.dial(testToken)
	res := n.ok(req{"id": 1, "op": "resume", "session": old.welcome.Session, "ids": []any{1, 2}})
	require.Equal(t, []any{
		req{"id": float64(1), "state": "cancelled"},
		req{"id": float64(2), "state": "cancelled"},
	}, res["outcomes"])
	require.Eventually(t, func() bool { return h.owner("held") == "" }, eventually, tick,
		"the old connection's lease is freed without waiting for the client timeout")
	require.Equal(t, "someone", h.owner("busy"))
	old.expectEnd()
}

// Only the token that opened a session may resume it; an unknown session is not known.
func TestResumeNeedsTheSessionsToken(t *testing.T) {
	h := start(t)
	c := h.dial(testToken)
	other := h.dial(restrictedToken)
	require.Equal(t, req{"known": false}, other.ok(req{"id": 1, "op": "resume", "session": c.welcome.Session, "ids": []any{1}}))
	require.Equal(t, req{"known": false}, c.ok(req{"id": 2, "op": "resume", "session": c.welcome.Session, "ids": []any{}}),
		"a connection cannot resume itself")
	c.fail(req{"id": 3, "op": "resume", "session": "nope", "ids": []any{}}, "bad_request", "")
}

// settle tells whether an acquire's claim holds its keys, with their fencing tokens, and undoes a
// partial one.
func TestSettleTellsWhetherAClaimHoldsItsKeys(t *testing.T) {
	h := start(t)
	c := h.dial(testToken)
	granted := c.ok(req{"id": 1, "op": "acquire", "keys": []string{"a", "b"}, "owner": "o", "claim": "claim-1"})
	require.Positive(t, granted["fencing_token"])
	require.Equal(t, req{"held": true, "fencing_token": granted["fencing_token"], "fencing_tokens": granted["fencing_tokens"]},
		c.ok(req{"id": 2, "op": "settle", "keys": []string{"a", "b"}, "owner": "o", "claim": "claim-1"}),
		"a settled acquire gets the tokens its lost reply carried")
	require.Equal(t, req{"held": false}, c.ok(req{"id": 3, "op": "settle", "keys": []string{"a"}, "owner": "o", "claim": "claim-2"}))
	require.Equal(t, "o", h.owner("a"), "settling another claim leaves the holder alone")
	c.fail(req{"id": 4, "op": "acquire", "keys": []string{"c"}, "claim": "no spaces"}, "bad_request", "")
	c.fail(req{"id": 5, "op": "settle", "keys": []string{"a"}, "owner": "o"}, "bad_request", "")
}

// A client that closes with 1000 holds none of its leases: they are freed at once, while an
// unclean end keeps them until the client timeout after the last frame.
func TestCleanCloseFreesTheLeasesAtOnce(t *testing.T) {
	h := start(t, func(c *bridge.Config) { c.ClientTimeout = time.Minute })
	c := h.dial(testToken)
	c.ok(req{"id": 1, "op": "lease", "keys": []string{"k"}})
	require.NoError(t, c.ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")))
	require.Eventually(t, func() bool { return h.owner("k") == "" }, eventually, tick)
}

// Leases report how long they are certainly held, in the lease reply and in every ping.
func TestLeaseValidityIsReported(t *testing.T) {
	h := start(t)
	c := h.dial(testToken)
	res := c.ok(req{"id": 1, "op": "lease", "keys": []string{"k"}, "expire": 10})
	valid := res["valid_ms"].(float64)
	require.Greater(t, valid, 8000.0)
	require.LessOrEqual(t, valid, 9000.0, "a tenth of the TTL is the safety margin")
	leases := c.ok(req{"id": 2, "op": "ping"})["leases"].(req)
	require.LessOrEqual(t, leases[res["lease"].(string)].(float64), 9000.0)
}

// Defect: one connection could hold leases of 256 keys with expire 1 s by the thousand, and run
// release_all (a SCAN of the namespace) 256 times at once; a key-prefix token was not enforced.
func TestLeaseAndRequestLimits(t *testing.T) {
	h := start(t, func(c *bridge.Config) {
		c.Limits.MaxRenewalsPerSecond = 10
		c.Tokens = append(c.Tokens, bridge.Token{Secret: "keys-token", KeyPrefix: "cart:"})
	})
	c := h.dial(testToken)
	res := c.ok(req{"id": 1, "op": "lease", "keys": []string{"a", "b"}, "expire": 1})
	require.Greater(t, res["valid_ms"].(float64), 1000.0, "expire is raised to min_lease_expire (2 s)")
	require.Equal(t, "1", h.metric(bridge.MetricExpireRaised))
	// 2 keys every 667 ms are 3 renewals/s; 3 more keys are 4.5: 7.5 of 10; 2 more go beyond.
	c.ok(req{"id": 2, "op": "lease", "keys": []string{"c", "d", "e"}, "expire": 2})
	c.fail(req{"id": 3, "op": "lease", "keys": []string{"f", "g"}, "expire": 2}, "too_many_renewals", "")
	c.ok(req{"id": 4, "op": "lease", "keys": []string{"f", "g"}, "expire": 60})

	k := h.dial("keys-token")
	require.Equal(t, "cart:", k.welcome.KeyPrefix)
	k.ok(req{"id": 1, "op": "acquire", "keys": []string{"cart:1"}})
	k.fail(req{"id": 2, "op": "acquire", "keys": []string{"cart:2", "order:1"}}, "key_forbidden",
		`key "order:1" is not allowed for this token: keys must start with "cart:"`)
	k.fail(req{"id": 3, "op": "lease", "keys": []string{"x"}}, "key_forbidden", "")
	k.fail(req{"id": 4, "op": "release_all"}, "key_forbidden", "")
	require.Empty(t, h.owner("cart:2"))
}

// Defect: a bridge took connections without bound. Beyond the limits, upgrades get 503 with
// Retry-After before any WebSocket exists.
func TestConnectionLimits(t *testing.T) {
	h := start(t, func(c *bridge.Config) { c.MaxConnections, c.MaxConnectionsPerToken = 3, 2 })
	h.dial(testToken)
	h.dial(testToken)
	_, resp, err := h.dialHeader(bearer(testToken))
	require.ErrorIs(t, err, websocket.ErrBadHandshake)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
	h.dial(restrictedToken)
	_, resp, err = h.dialHeader(bearer(restrictedToken))
	require.ErrorIs(t, err, websocket.ErrBadHandshake)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, "1", h.metric(`locktui_bridge_rejected_upgrades_total{reason="too_many_connections_for_token"}`))
	require.Equal(t, "1", h.metric(`locktui_bridge_rejected_upgrades_total{reason="too_many_connections"}`))
}

// One release_all at a time per connection: each is a SCAN of the whole namespace.
func TestOneReleaseAllAtATime(t *testing.T) {
	h := start(t, stallable(t))
	c := h.dial(testToken)
	c.warmUp()
	c.ok(req{"id": 0, "op": "acquire", "keys": []string{"x"}, "owner": "o"})
	unpause := h.pauseWrites() // release_all's SCAN goes on, its release script waits
	c.send(req{"id": 1, "op": "release_all", "owner": "o"})
	h.awaitHeldCommands(1)
	c.fail(req{"id": 2, "op": "release_all", "owner": "p"}, "too_many_requests",
		"a release_all is already running on this connection: wait for its reply")
	unpause()
	f := c.recv()
	require.JSONEq(t, "1", string(f.ID))
	require.True(t, f.OK)
	c.ok(req{"id": 3, "op": "release_all", "owner": "p"})
}

// Defect: two connections of one token that resumed each other's session at once waited for each
// other forever (each resume waited for the other connection's requests, its resume among them):
// their leases were renewed for good and their goroutines never ended. A resume now ends with its
// own connection.
func TestCrossedResumesEnd(t *testing.T) {
	h := start(t, func(c *bridge.Config) { c.ClientTimeout = time.Minute })
	for i := range 20 {
		a, b := h.dial(testToken), h.dial(testToken)
		ka, kb := fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i)
		a.ok(req{"id": 1, "op": "lease", "keys": []string{ka}})
		b.ok(req{"id": 1, "op": "lease", "keys": []string{kb}})
		var wg sync.WaitGroup
		var errA, errB error
		wg.Go(func() {
			errA = a.ws.WriteJSON(req{"id": 2, "op": "resume", "session": b.welcome.Session, "ids": []any{1}})
		})
		wg.Go(func() {
			errB = b.ws.WriteJSON(req{"id": 2, "op": "resume", "session": a.welcome.Session, "ids": []any{1}})
		})
		wg.Wait()
		require.NoError(t, errA)
		require.NoError(t, errB)
		require.Eventually(t, func() bool { return h.owner(ka) == "" || h.owner(kb) == "" }, eventually, tick,
			"round %d: a resumed connection's leases are freed at once", i)
		for _, c := range []*client{a, b} { // the survivor, if any, holds none of its leases
			_ = c.ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
			c.expectEnd() // the bridge has read the close before the next round (or the shutdown)
		}
	}
}

// Found in review: a client that opens and closes connections in a loop piled up closed
// sessions (each keeping up to max_in_flight replies) for the resume window. At most
// --max-connections closed sessions are kept, and each keeps at most 1 MiB of replies.
func TestClosedSessionsAndTheirRepliesAreBounded(t *testing.T) {
	h := start(t, func(c *bridge.Config) { c.MaxConnections = 2 })
	var sessions []string
	for range 3 {
		c := h.dial(testToken)
		sessions = append(sessions, c.welcome.Session)
		require.NoError(t, c.ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")))
		c.expectEnd()
		// The client may see the end (the bridge's close reply) before the bridge has ended the
		// connection: "oldest" is in the order the bridge ended them.
		require.Eventually(t, func() bool { return h.metric(bridge.MetricConnections) == "0" }, eventually, tick)
	}
	n := h.dial(testToken)
	require.Equal(t, req{"known": false}, n.ok(req{"id": 1, "op": "resume", "session": sessions[0], "ids": []any{}}),
		"the oldest closed session was dropped")
	require.Equal(t, true, n.ok(req{"id": 2, "op": "resume", "session": sessions[2], "ids": []any{}})["known"])

	// Replies naming 60 KB keys: about 17 fit in 1 MiB, the oldest go.
	c := h.dial(testToken)
	long := strings.Repeat("k", 60<<10)
	require.NoError(t, h.rdb.Set(context.Background(), namespace+long, "someone", 0).Err())
	for id := range 20 {
		c.fail(req{"id": id, "op": "acquire", "keys": []string{long}, "owner": "o"}, "not_acquired", "")
	}
	require.NoError(t, c.ws.NetConn().Close())
	res := n.ok(req{"id": 3, "op": "resume", "session": c.welcome.Session, "ids": []any{0, 19}})
	outcomes := res["outcomes"].([]any)
	require.Equal(t, "unknown", outcomes[0].(req)["state"], "the oldest reply was dropped")
	require.Equal(t, "replied", outcomes[1].(req)["state"])
}
