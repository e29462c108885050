package bridge_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/bridge"
	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
)

// dialAs connects with token and the given Locktui-Client header, and reads the welcome.
func (h *harness) dialAs(token, hello string) *client {
	h.t.Helper()
	header := bearer(token)
	header.Set(bridge.ClientHeader, hello)
	ws, _, err := h.dialHeader(header)
	require.NoError(h.t, err)
	h.t.Cleanup(func() { _ = ws.Close() })
	c := &client{t: h.t, ws: ws}
	c.welcome = c.recv()
	require.Equal(h.t, "welcome", c.welcome.Type)
	return c
}

// The holder records of a bridge client's locks name its process, as its hello (the
// Locktui-Client header) gives it; without one, its address. A lease carries its token.
func TestHolderRecordsNameTheBridgeClient(t *testing.T) {
	h := start(t)
	ops := operator.New(h.rdb, &operator.Options{Namespace: namespace})
	c := h.dialAs(testToken, "host=web%201&pid=4242&program=medusa-worker")
	grant := c.ok(req{"id": 1, "op": "lease", "keys": []string{"k"}})
	lock, ok, err := ops.Get(t.Context(), "k")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, provider.Holder{Host: "web 1", PID: 4242, Program: "medusa-worker", Client: provider.ClientBridge}, lock.Record.Holder)
	require.EqualValues(t, lock.Record.FencingToken, grant["fencing_token"])
	require.Equal(t, req{"k": grant["fencing_token"]}, grant["fencing_tokens"])

	anon := h.dial(testToken)
	anon.ok(req{"id": 1, "op": "acquire", "keys": []string{"plain"}, "owner": "o"})
	lock, _, err = ops.Get(t.Context(), "plain")
	require.NoError(t, err)
	require.Equal(t, provider.Holder{Host: "127.0.0.1", Client: provider.ClientBridge}, lock.Record.Holder)
}
