package bench_test

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/bridge"
	"github.com/locktui/locktui/internal/bench"
	"github.com/locktui/locktui/internal/nodeproc"
	"github.com/locktui/locktui/internal/testsupport"
	"github.com/locktui/locktui/internal/testsupport/redistest"
)

// TestStartBridgeServesTheNamespaceWithTheTokenUntilStopped starts the bridge the way a run
// does and checks what the Node runner relies on: the token is required, the welcome names the
// bench namespace, a lease lands under it in Redis, and Stop shuts the bridge down gracefully
// (releasing the lease) and removes the binary.
func TestStartBridgeServesTheNamespaceWithTheTokenUntilStopped(t *testing.T) {
	dir, err := nodeproc.FindCompatDir(".")
	require.NoError(t, err)
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ns := bench.Namespace("bridge-test")
	var log testsupport.Buffer
	b, err := bench.StartBridge(t.Context(), bench.Env{RedisURL: srv.URL, CompatDir: dir, Log: &log}, ns)
	require.NoError(t, err)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = b.Stop()
		}
	})
	assert.Regexp(t, `^ws://127\.0\.0\.1:\d+/ws$`, b.URL)
	assert.Equal(t, ns, b.Namespace)
	assert.GreaterOrEqual(t, len(b.Token), 20, "token %q is too short to be random", b.Token)
	assert.NotContains(t, log.String(), b.Token, "the token must not be logged")

	dialer := websocket.Dialer{HandshakeTimeout: 10 * time.Second, Subprotocols: []string{bridge.Subprotocol}}
	_, resp, err := dialer.DialContext(t.Context(), b.URL, nil)
	require.Error(t, err, "the bridge accepted a client without the token")
	require.NotNil(t, resp)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	conn, _, err := dialer.DialContext(t.Context(), b.URL, http.Header{"Authorization": {"Bearer " + b.Token}})
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	var welcome struct {
		Type      string `json:"type"`
		Namespace string `json:"namespace"`
	}
	require.NoError(t, conn.ReadJSON(&welcome))
	assert.Equal(t, "welcome", welcome.Type)
	assert.Equal(t, ns, welcome.Namespace)

	require.NoError(t, conn.WriteJSON(map[string]any{"id": 1, "op": "lease", "keys": []string{"k"}, "timeout": 5, "expire": 60}))
	var reply struct {
		OK     bool `json:"ok"`
		Result struct {
			Owner string `json:"owner"`
		} `json:"result"`
	}
	require.NoError(t, conn.ReadJSON(&reply))
	require.True(t, reply.OK, "lease refused")
	owner, err := rdb.Get(t.Context(), ns+"k").Result()
	require.NoError(t, err, "the lease is not under the namespace")
	assert.Equal(t, reply.Result.Owner, owner)

	stopped = true
	require.NoError(t, b.Stop(), "log:\n%s", log.String())
	assert.NoError(t, b.Stop(), "a second Stop")
	assert.Zero(t, rdb.Exists(t.Context(), ns+"k").Val(), "the bridge kept the lease after SIGTERM")
	assert.Contains(t, log.String(), `"events":false`)
	assert.Contains(t, log.String(), `"msg":"stopped"`)
	assert.NotContains(t, log.String(), b.Token, "the token must not be logged")
}

func TestStartBridgeNeedsTheLocktuiModule(t *testing.T) {
	compat := filepath.Join(t.TempDir(), "compat")
	require.NoError(t, os.Mkdir(compat, 0o755))
	_, err := bench.StartBridge(t.Context(), bench.Env{RedisURL: "redis://127.0.0.1:1", CompatDir: compat}, bench.Namespace("x"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is not the locktui module")
}
