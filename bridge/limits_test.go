package bridge_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/bridge"
)

func smallLimits(c *bridge.Config) {
	c.Limits = bridge.Limits{MaxFrameBytes: 1024, MaxKeys: 3, MaxInFlight: 2, MaxLeases: 1}
	c.MaxBadFrames = 3
}

func TestPerConnectionLimits(t *testing.T) {
	h := start(t, smallLimits)
	c := h.dial(testToken)
	require.Equal(t, map[string]int{"max_frame_bytes": 1024, "max_keys": 3, "max_in_flight": 2, "max_leases": 1,
		"min_lease_expire": 2, "max_renewals_per_second": 1000, "max_seconds": bridge.MaxSeconds}, c.welcome.Limits)

	c.fail(req{"id": 1, "op": "acquire", "keys": []string{"a", "b", "c", "d"}}, "too_many_keys",
		"too many keys in one request: 4, the limit is 3")

	c.ok(req{"id": 2, "op": "lease", "keys": []string{"l1"}})
	c.fail(req{"id": 3, "op": "lease", "keys": []string{"l2"}}, "too_many_leases",
		"too many leases on this connection: the limit is 1")
	require.Empty(t, h.owner("l2"))

	require.NoError(t, h.rdb.Set(context.Background(), namespace+"busy", "someone", 0).Err())
	c.send(req{"id": "w1", "op": "acquire", "keys": []string{"busy"}, "owner": "o", "await_queue": true})
	c.send(req{"id": "w2", "op": "acquire", "keys": []string{"busy"}, "owner": "o", "await_queue": true})
	f := c.fail(req{"id": 4, "op": "release", "keys": []string{"x"}}, "too_many_requests",
		"too many requests in flight on this connection: the limit is 2")
	require.Equal(t, "not_allowed", f.Error.Type)
	c.ok(req{"id": 5, "op": "ping"}) // answered at once, not counted

	// Another connection has limits of its own.
	other := h.dial(testToken)
	other.ok(req{"id": 1, "op": "lease", "keys": []string{"l3"}})
	other.ok(req{"id": 2, "op": "release", "keys": []string{"x"}})
}

func TestInvalidFramesGetErrorReplies(t *testing.T) {
	h := start(t)
	c := h.dial(testToken)
	for _, tc := range []struct {
		frame, id, code, message string
	}{
		{`not json`, "null", "bad_request", ""},
		{`"ping"`, "null", "bad_request", "a request must be a JSON object"},
		{`[]`, "null", "bad_request", "an empty batch: a batch is an array of one request or more"},
		{`[{"id":1,"op":"ping"}`, "null", "bad_request", ""},
		{`{"id":{},"op":"ping"}`, "null", "bad_request", `"id" must be a string or a number`},
		{`{"id":7,"op":"fly"}`, "7", "unknown_op", `unknown op "fly"`},
		{`{"id":"x","op":"ping","extra":1}`, `"x"`, "bad_request", `unknown field "extra" for op "ping"`},
		{`{"id":8,"op":"acquire","keys":[1]}`, "8", "bad_request", `"keys" must be an array of strings`},
	} {
		c.sendRaw(websocket.TextMessage, []byte(tc.frame))
		f := c.recv()
		require.JSONEq(t, tc.id, string(f.ID), "frame %s", tc.frame)
		requireError(t, f, tc.code, tc.message)
		require.Equal(t, "invalid_data", f.Error.Type)
	}
	c.ok(req{"id": 9, "op": "ping"}) // the connection is still fine
	require.Equal(t, "5", h.metric(`locktui_bridge_requests_total{op="invalid",result="bad_request"}`))
	require.Equal(t, "1", h.metric(`locktui_bridge_requests_total{op="ping",result="bad_request"}`))
}

func TestABatchIsServedAsItsRequestsInOrder(t *testing.T) {
	h := start(t)
	c := h.dial(testToken)
	// Two leases on one key in one batch: the first sent gets it (order.go), and an invalid
	// request in the batch is answered without harming the others.
	c.sendRaw(websocket.TextMessage, []byte(`[{"id":1,"op":"lease","keys":["b"]},{"id":{},"op":"ping"},`+
		`{"id":3,"op":"fly"},{"id":4,"op":"lease","keys":["b"],"timeout":0.2},{"id":5,"op":"ping"}]`))
	replies := map[string]frame{}
	for range 5 {
		f := c.recv()
		replies[string(f.ID)] = f
	}
	require.True(t, replies["1"].OK, "the first lease sent takes the key: %+v", replies["1"].Error)
	requireError(t, replies["null"], "bad_request", `"id" must be a string or a number`)
	requireError(t, replies["3"], "unknown_op", `unknown op "fly"`)
	requireError(t, replies["4"], "timed_out", "Timed-out acquiring lock.")
	require.True(t, replies["5"].OK)
	require.Equal(t, replies["1"].Result["owner"], h.owner("b"))
}

func TestProtocolViolationsCloseOnlyTheirConnection(t *testing.T) {
	h := start(t, smallLimits)
	bystander := h.dial(testToken)
	owner := bystander.ok(req{"id": 1, "op": "lease", "keys": []string{"held"}})["owner"].(string)

	binary := h.dial(testToken)
	binary.sendRaw(websocket.BinaryMessage, []byte(`{"id":1,"op":"ping"}`))
	binary.expectClose(websocket.CloseUnsupportedData)

	huge := h.dial(testToken)
	huge.sendRaw(websocket.TextMessage, []byte(`{"id":1,"op":"ping","pad":"`+strings.Repeat("x", 4096)+`"}`))
	huge.expectClose(websocket.CloseMessageTooBig)

	flood := h.dial(testToken)
	for range 10 {
		_ = flood.ws.WriteMessage(websocket.TextMessage, []byte(`{oops`)) // may fail once closed
	}
	flood.expectClose(websocket.ClosePolicyViolation)

	bystander.ok(req{"id": 2, "op": "ping"})
	require.Equal(t, owner, h.owner("held"))
	for _, reason := range []string{"binary", "too_large", "flood"} {
		require.Equal(t, "1", h.metric(bridge.MetricClosedByRule+`{reason="`+reason+`"}`), reason)
	}
}
