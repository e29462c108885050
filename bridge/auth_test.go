package bridge_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/gorilla/websocket"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/bridge"
)

func TestUpgradeNeedsAValidToken(t *testing.T) {
	h := start(t)
	for _, tc := range []struct {
		name   string
		header http.Header
	}{
		{"no header", nil},
		{"wrong token", bearer("not-the-token")},
		{"token prefix", bearer(testToken[:5])},
		{"token with suffix", bearer(testToken + "x")},
		{"basic scheme", http.Header{"Authorization": {"Basic " + testToken}}},
		{"empty bearer", http.Header{"Authorization": {"Bearer "}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws, resp, err := h.dialHeader(tc.header)
			require.ErrorIs(t, err, websocket.ErrBadHandshake)
			require.Nil(t, ws)
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
			require.Equal(t, `Bearer realm="locktui-bridge"`, resp.Header.Get("WWW-Authenticate"))
		})
	}
	c := h.dial(testToken)
	require.Equal(t, bridge.Subprotocol, c.ws.Subprotocol())
	w := c.welcome
	require.Equal(t, bridge.ProtocolVersion, w.Version)
	require.Equal(t, namespace, w.Namespace)
	require.Equal(t, "", w.OwnerPrefix)
	require.Equal(t, "", w.KeyPrefix)
	require.Regexp(t, "^[0-9a-f]{32}$", w.Session)
	require.Equal(t, int64(60000), w.ResumeMS)
	require.Equal(t, map[string]int{"interval_ms": 1000, "timeout_ms": 4000, "margin_ms": 1000}, w.Heartbeat)
	require.Equal(t, map[string]int{"max_frame_bytes": 65536, "max_keys": 256, "max_in_flight": 256, "max_leases": 1024,
		"min_lease_expire": 2, "max_renewals_per_second": 1000, "max_seconds": bridge.MaxSeconds}, w.Limits)
	require.Equal(t, ownerPrefix, h.dial(restrictedToken).welcome.OwnerPrefix)
	require.Equal(t, "6", h.metric(`locktui_bridge_rejected_upgrades_total{reason="unauthorized"}`))
}

func TestUpgradeChecksOriginAndSubprotocol(t *testing.T) {
	h := start(t, func(c *bridge.Config) { c.AllowOrigins = []string{"https://app.example/"} })
	withOrigin := func(origin string) http.Header {
		hd := bearer(testToken)
		hd.Set("Origin", origin)
		return hd
	}
	_, resp, err := h.dialHeader(withOrigin("https://evil.example"))
	require.ErrorIs(t, err, websocket.ErrBadHandshake)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)

	ws, resp, err := h.dialHeader(withOrigin("https://app.example"))
	require.NoError(t, err)
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	require.NoError(t, ws.Close())

	// A client of protocol version 2 is told what to do about it.
	d := websocket.Dialer{Subprotocols: []string{"locktui-bridge.v2"}}
	_, resp, err = d.Dial(h.wsURL(), bearer(testToken))
	require.ErrorIs(t, err, websocket.ErrBadHandshake)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Contains(t, string(body), "this bridge speaks "+bridge.Subprotocol)
	require.Contains(t, string(body), "upgrade the client")

	d = websocket.Dialer{} // no subprotocol offered: accepted
	ws, _, err = d.Dial(h.wsURL(), bearer(testToken))
	require.NoError(t, err)
	require.NoError(t, ws.Close())
}

func TestInsecureModeOnLoopback(t *testing.T) {
	h := start(t, func(c *bridge.Config) { c.Tokens, c.Insecure = nil, true })
	ws, resp, err := h.dialHeader(nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	require.NoError(t, ws.Close())
}

// In insecure mode a client may send no token; one that sends a wrong token is refused, and
// owner-restricted tokens are refused at start: their restriction could be escaped.
func TestInsecureModeStillRefusesWrongTokens(t *testing.T) {
	h := start(t, func(c *bridge.Config) { c.Tokens, c.Insecure = []bridge.Token{{Secret: testToken}}, true })
	for _, tc := range []struct {
		name   string
		header http.Header
		status int
	}{
		{"no header", nil, http.StatusSwitchingProtocols},
		{"valid token", bearer(testToken), http.StatusSwitchingProtocols},
		{"wrong token", bearer("not-the-token"), http.StatusUnauthorized},
		{"basic scheme", http.Header{"Authorization": {"Basic " + testToken}}, http.StatusUnauthorized},
		{"empty header", http.Header{"Authorization": {""}}, http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws, resp, err := h.dialHeader(tc.header)
			require.Equal(t, tc.status, resp.StatusCode)
			if tc.status != http.StatusSwitchingProtocols {
				require.ErrorIs(t, err, websocket.ErrBadHandshake)
				return
			}
			require.NoError(t, err)
			require.NoError(t, ws.Close())
		})
	}

	_, err := bridge.New(bridge.Config{Client: unusedClient(t), Insecure: true,
		Tokens: []bridge.Token{{Secret: "a"}, {Secret: "b", OwnerPrefix: "svc-b:"}}})
	require.ErrorIs(t, err, bridge.ErrInsecureRestricted)
}

// fakeListener reports an address other machines reach; Serve must refuse it before accepting.
type fakeListener struct{ net.Listener }

func (fakeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 7420} }
func (fakeListener) Close() error   { return nil }

func TestInsecureModeRefusedOffLoopback(t *testing.T) {
	srv, err := bridge.New(bridge.Config{Client: unusedClient(t), Insecure: true})
	require.NoError(t, err)
	require.ErrorIs(t, srv.Serve(fakeListener{}), bridge.ErrInsecureNotLoopback)

	_, err = bridge.New(bridge.Config{Client: unusedClient(t)})
	require.ErrorIs(t, err, bridge.ErrNoToken)

	for _, tc := range []struct {
		addr     string
		insecure bool
		want     error
	}{
		{"127.0.0.1:7420", true, nil},
		{"[::1]:7420", true, nil},
		{"localhost:7420", true, nil},
		{"0.0.0.0:7420", true, bridge.ErrInsecureNotLoopback},
		{":7420", true, bridge.ErrInsecureNotLoopback},
		{"192.0.2.1:7420", true, bridge.ErrInsecureNotLoopback},
		{"0.0.0.0:7420", false, nil},
	} {
		err := bridge.CheckListen(tc.addr, tc.insecure)
		if tc.want == nil {
			require.NoError(t, err, "CheckListen(%q, %v)", tc.addr, tc.insecure)
		} else {
			require.ErrorIs(t, err, tc.want, "CheckListen(%q, %v)", tc.addr, tc.insecure)
		}
	}
	require.Error(t, bridge.CheckListen("7420", false))
}

func TestParseToken(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bridge.Token
		err  bool
	}{
		{in: "s3cret", want: bridge.Token{Secret: "s3cret"}},
		{in: "s3cret;owner=svc-a:", want: bridge.Token{Secret: "s3cret", OwnerPrefix: "svc-a:"}},
		{in: "s3cret;owner=svc:a", want: bridge.Token{Secret: "s3cret", OwnerPrefix: "svc:a"}},
		{in: "s3cret;keys=cart:", want: bridge.Token{Secret: "s3cret", KeyPrefix: "cart:"}},
		{in: "s3cret;keys=cart:;owner=svc", want: bridge.Token{Secret: "s3cret", OwnerPrefix: "svc", KeyPrefix: "cart:"}},
		{in: "", err: true},
		{in: ";owner=svc", err: true},
		{in: "s3cret;owner=", err: true},
		{in: "s3cret;owner=a;owner=b", err: true},
		{in: "s3cret;color=red", err: true},
		{in: "s3cret:svc-a:", err: true}, // version 1's syntax
		{in: "s3 cret", err: true},
	} {
		got, err := bridge.ParseToken(tc.in)
		if tc.err {
			require.ErrorIs(t, err, bridge.ErrBadToken, "ParseToken(%q)", tc.in)
			continue
		}
		require.NoError(t, err, "ParseToken(%q)", tc.in)
		require.Equal(t, tc.want, got, "ParseToken(%q)", tc.in)
	}
	got, err := bridge.ParseTokenList(" a, b;owner=svc-b: ,")
	require.NoError(t, err)
	require.Equal(t, []bridge.Token{{Secret: "a"}, {Secret: "b", OwnerPrefix: "svc-b:"}}, got)
	_, err = bridge.ParseTokenList("a,b;owner=")
	require.True(t, errors.Is(err, bridge.ErrBadToken))

	for _, tokens := range [][]bridge.Token{
		{{Secret: "a"}, {Secret: "a", OwnerPrefix: "x"}}, // twice
		{{Secret: "a:b"}},
		{{Secret: ""}},
	} {
		_, err = bridge.New(bridge.Config{Client: unusedClient(t), Tokens: tokens})
		require.ErrorIs(t, err, bridge.ErrBadToken, "tokens %+v", tokens)
	}
}

// unusedClient is a Redis client for configurations that never reach Redis.
func unusedClient(t *testing.T) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = c.Close() })
	return c
}
