package bridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/locktui/locktui/bridge"
	"github.com/locktui/locktui/internal/testsupport/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	testToken       = "test-token-0123456789"
	restrictedToken = "restricted-token-0123"
	ownerPrefix     = "svc-a:"
	namespace       = "medusa_lock:"
	// replyWait bounds every wait for a frame in these tests; it is never expected to pass.
	replyWait = 10 * time.Second
	// eventually is the bound of require.Eventually waits.
	eventually = 5 * time.Second
	tick       = 10 * time.Millisecond
)

// harness is a bridge on a real listener in front of a private redis-server.
type harness struct {
	t     *testing.T
	redis *redistest.Server
	rdb   *redis.Client // the test's own view of Redis
	srv   *bridge.Server
	addr  string
	// shutdown runs Shutdown with ctx, then waits for Serve to return; only the first call
	// does, later ones return its result. The cleanup requires it to succeed unless the test
	// called it itself.
	shutdown func(ctx context.Context) error
	stop     func() error // shutdown bounded by replyWait
}

// newClient is the bridge's Redis client in these tests: no retries, so that the tests that
// stop or stall Redis get their errors at once. adjust, when set, changes its options.
func newClient(t *testing.T, addr string, adjust func(*redis.Options)) *redis.Client {
	opts := &redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1, DialerRetryTimeout: time.Millisecond}
	if adjust != nil {
		adjust(opts)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// withRedisOptions gives the bridge a Redis client of its own, with adjusted options.
func withRedisOptions(t *testing.T, adjust func(*redis.Options)) func(*bridge.Config) {
	return func(c *bridge.Config) {
		c.Client = newClient(t, c.Client.(*redis.Client).Options().Addr, adjust)
	}
}

// start runs a bridge with the two test tokens; mods adjust the configuration.
func start(t *testing.T, mods ...func(*bridge.Config)) *harness {
	t.Helper()
	rs := redistest.Start(t)
	client := newClient(t, rs.Addr, nil)
	cfg := bridge.Config{
		Client: client,
		Tokens: []bridge.Token{{Secret: testToken}, {Secret: restrictedToken, OwnerPrefix: ownerPrefix}},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	for _, mod := range mods {
		mod(&cfg)
	}
	srv, err := bridge.New(cfg)
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	h := &harness{t: t, redis: rs, rdb: rs.Client(t), srv: srv, addr: l.Addr().String()}
	var stopped, checked bool
	var stopErr error
	shutdown := func(ctx context.Context) error {
		if !stopped {
			stopped = true
			stopErr = errors.Join(srv.Shutdown(ctx), <-served)
		}
		return stopErr
	}
	h.shutdown = func(ctx context.Context) error {
		checked = true
		return shutdown(ctx)
	}
	h.stop = func() error {
		ctx, cancel := context.WithTimeout(context.Background(), replyWait)
		defer cancel()
		return shutdown(ctx)
	}
	t.Cleanup(func() {
		err := h.stop()
		if !checked {
			require.NoError(t, err)
		}
	})
	return h
}

func (h *harness) wsURL() string   { return "ws://" + h.addr + "/ws" }
func (h *harness) httpURL() string { return "http://" + h.addr }

// frame is any frame the bridge sends: a reply, an event or the welcome.
type frame struct {
	Type   string          `json:"type"`
	ID     json.RawMessage `json:"id"`
	OK     bool            `json:"ok"`
	Result map[string]any  `json:"result"`
	Error  *struct {
		Type    string `json:"type"`
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Lease       string         `json:"lease"`
	Keys        []string       `json:"keys"`
	Version     int            `json:"version"`
	Namespace   string         `json:"namespace"`
	Limits      map[string]int `json:"limits"`
	OwnerPrefix string         `json:"owner_prefix"`
	KeyPrefix   string         `json:"key_prefix"`
	Session     string         `json:"session"`
	ResumeMS    int64          `json:"resume_ms"`
	Heartbeat   map[string]int `json:"heartbeat"`
	DrainMS     int64          `json:"drain_ms"`
}

// client is a gorilla/websocket client of the bridge.
type client struct {
	t       *testing.T
	ws      *websocket.Conn
	welcome frame
	pending []frame // the messages of the last batch frame not read yet
}

// dialHeader connects with the given headers and returns the response of the handshake.
func (h *harness) dialHeader(header http.Header) (*websocket.Conn, *http.Response, error) {
	d := websocket.Dialer{HandshakeTimeout: replyWait, Subprotocols: []string{bridge.Subprotocol}}
	ws, resp, err := d.Dial(h.wsURL(), header)
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	return ws, resp, err
}

func bearer(token string) http.Header {
	return http.Header{"Authorization": {"Bearer " + token}}
}

// dial connects with token and reads the welcome.
func (h *harness) dial(token string) *client {
	h.t.Helper()
	ws, resp, err := h.dialHeader(bearer(token))
	require.NoError(h.t, err)
	require.Equal(h.t, http.StatusSwitchingProtocols, resp.StatusCode)
	h.t.Cleanup(func() { _ = ws.Close() })
	c := &client{t: h.t, ws: ws}
	c.welcome = c.recv()
	require.Equal(h.t, "welcome", c.welcome.Type)
	return c
}

// send writes one request.
func (c *client) send(req map[string]any) {
	c.t.Helper()
	require.NoError(c.t, c.ws.WriteJSON(req))
}

// sendRaw writes one frame as is.
func (c *client) sendRaw(typ int, data []byte) {
	c.t.Helper()
	require.NoError(c.t, c.ws.WriteMessage(typ, data))
}

// recv reads the next message: the next one of a batch frame already read, else of the next
// frame.
func (c *client) recv() frame {
	c.t.Helper()
	if len(c.pending) == 0 {
		c.pending = c.recvFrame()
	}
	f := c.pending[0]
	c.pending = c.pending[1:]
	return f
}

// recvFrame reads the next frame: its messages, one or a batch.
func (c *client) recvFrame() []frame {
	c.t.Helper()
	require.NoError(c.t, c.ws.SetReadDeadline(time.Now().Add(replyWait)))
	typ, data, err := c.ws.ReadMessage()
	require.NoError(c.t, err)
	require.Equal(c.t, websocket.TextMessage, typ)
	if data[0] == '[' {
		var batch []frame
		require.NoError(c.t, json.Unmarshal(data, &batch), "frame %s", data)
		require.Greater(c.t, len(batch), 1, "a batch of one: %s", data)
		return batch
	}
	var f frame
	require.NoError(c.t, json.Unmarshal(data, &f), "frame %s", data)
	return []frame{f}
}

// call sends a request and returns the next frame, which must answer it.
func (c *client) call(req map[string]any) frame {
	c.t.Helper()
	c.send(req)
	f := c.recv()
	want, err := json.Marshal(req["id"])
	require.NoError(c.t, err)
	require.JSONEq(c.t, string(want), string(f.ID), "reply to the wrong request")
	return f
}

// ok calls and requires success.
func (c *client) ok(req map[string]any) map[string]any {
	c.t.Helper()
	f := c.call(req)
	require.True(c.t, f.OK, "request %v failed: %+v", req, f.Error)
	return f.Result
}

// fail calls and requires the error code and, when message is not empty, the exact message.
func (c *client) fail(req map[string]any, code, message string) frame {
	c.t.Helper()
	f := c.call(req)
	requireError(c.t, f, code, message)
	return f
}

func requireError(t *testing.T, f frame, code, message string) {
	t.Helper()
	require.False(t, f.OK, "expected %s, got success %v", code, f.Result)
	require.NotNil(t, f.Error)
	require.Equal(t, code, f.Error.Code, "message: %s", f.Error.Message)
	if message != "" {
		require.Equal(t, message, f.Error.Message)
	}
}

// expectClose reads until the bridge closes the connection and requires the close code.
func (c *client) expectClose(code int) {
	c.t.Helper()
	require.NoError(c.t, c.ws.SetReadDeadline(time.Now().Add(replyWait)))
	for {
		_, _, err := c.ws.ReadMessage()
		if err == nil {
			continue
		}
		var ce *websocket.CloseError
		require.ErrorAs(c.t, err, &ce, "want close %d", code)
		require.Equal(c.t, code, ce.Code, "close text: %s", ce.Text)
		return
	}
}

// expectEnd reads until the connection ends, with a close frame or without.
func (c *client) expectEnd() {
	c.t.Helper()
	require.NoError(c.t, c.ws.SetReadDeadline(time.Now().Add(replyWait)))
	for {
		if _, _, err := c.ws.ReadMessage(); err != nil {
			var ne net.Error
			require.False(c.t, errors.As(err, &ne) && ne.Timeout(), "the connection did not end")
			return
		}
	}
}

// owner returns the owner of key in Redis, "" when the key is missing.
func (h *harness) owner(key string) string {
	h.t.Helper()
	v, err := h.rdb.Get(context.Background(), namespace+key).Result()
	if errors.Is(err, redis.Nil) {
		return ""
	}
	require.NoError(h.t, err)
	return v
}

// metric returns the value of one sample ("name" or "name{labels}") on /metrics, "" if absent.
func (h *harness) metric(sample string) string {
	h.t.Helper()
	v, _ := metricValue(h.metrics(), sample)
	return v
}

// metrics returns the /metrics text, from the handler itself (it answers after Shutdown too).
func (h *harness) metrics() string {
	h.t.Helper()
	rec := httptest.NewRecorder()
	h.srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(h.t, http.StatusOK, rec.Code)
	return rec.Body.String()
}

func (h *harness) get(path string) (string, int) {
	h.t.Helper()
	resp, err := plainHTTP.Get(h.httpURL() + path)
	require.NoError(h.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	return string(body), resp.StatusCode
}

// plainHTTP keeps no idle connections, so that no client goroutine outlives a test.
var plainHTTP = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: replyWait}

// metricValue finds the value of one sample line ("name{labels} value") in the /metrics text.
func metricValue(text, sample string) (string, bool) {
	for line := range strings.SplitSeq(text, "\n") {
		if rest, ok := strings.CutPrefix(line, sample+" "); ok {
			return rest, true
		}
	}
	return "", false
}
