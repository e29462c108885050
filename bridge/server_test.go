package bridge_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/bridge"
	"github.com/locktui/locktui/provider"
)

func TestShutdownReleasesLeasesThenSaysGoingAway(t *testing.T) {
	h := start(t)
	c := h.dial(testToken)
	c.ok(req{"id": 1, "op": "lease", "keys": []string{"k1", "k2"}})
	require.NoError(t, h.rdb.Set(context.Background(), namespace+"busy", "someone", 0).Err())
	c.send(req{"id": 2, "op": "acquire", "keys": []string{"busy"}, "owner": "o", "await_queue": true})
	c.ok(req{"id": 3, "op": "ping"}) // the queued acquire is in flight now

	stopped := make(chan error, 1)
	go func() { stopped <- h.stop() }()
	f := c.recv()
	require.JSONEq(t, "2", string(f.ID))
	requireError(t, f, "shutting_down", "the bridge is shutting down")
	require.Equal(t, "unexpected_state", f.Error.Type)
	c.expectClose(websocket.CloseGoingAway)
	require.Empty(t, h.owner("k1"), "leases are released before the close")
	require.Empty(t, h.owner("k2"))
	require.NoError(t, <-stopped)

	_, _, err := h.dialHeader(bearer(testToken))
	require.Error(t, err, "a stopped bridge accepts no connection")
}

// With Redis stalled, the lease releases of a shutdown cannot finish: Shutdown still returns
// once its context is done, says what it left, and the releases finish in the background.
func TestShutdownReturnsWhenItsContextEndsThoughRedisStalls(t *testing.T) {
	logs := &logRecorder{}
	h := start(t, stallable(t), recordLogs(logs))
	var keys []string
	for i := range 2 {
		c := h.dial(testToken)
		for j := range 6 { // more leases than releases run at once
			key := fmt.Sprintf("k%d-%d", i, j)
			c.ok(req{"id": j, "op": "lease", "keys": []string{key}})
			keys = append(keys, key)
		}
	}
	unpause := h.pauseWrites()
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- h.shutdown(ctx) }()
	h.awaitHeldCommands(1) // the shutdown is releasing
	cancel()
	var err error
	select {
	case err = <-stopped:
	case <-time.After(replyWait):
		unpause()
		t.Fatal("Shutdown did not return once its context was done")
	}
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "12 lease(s) not released yet")
	left := logs.await(t, "shutdown cut short: leases not released yet are released in the background until the process exits, else their keys expire with their TTL")
	require.Equal(t, int64(12), left["leases_unreleased"].Int64())
	require.Equal(t, int64(2), left["connections_open"].Int64())
	require.NotEmpty(t, h.owner(keys[0]), "Redis has not released anything yet")

	unpause()
	require.Eventually(t, func() bool {
		for _, key := range keys {
			if h.owner(key) != "" {
				return false
			}
		}
		return true
	}, eventually, tick, "the releases go on after Shutdown returned")
	require.Eventually(t, func() bool { return h.metric(bridge.MetricConnections) == "0" }, eventually, tick)
}

func TestHealthReadinessAndRedisErrors(t *testing.T) {
	h := start(t)
	c := h.dial(testToken)
	body, status := h.get("/healthz")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "ok\n", body)
	_, status = h.get("/readyz")
	require.Equal(t, http.StatusOK, status)

	h.redis.Stop()
	body, status = h.get("/readyz")
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.True(t, strings.HasPrefix(body, "redis: "), body)
	_, status = h.get("/healthz")
	require.Equal(t, http.StatusOK, status, "the process is still up")

	f := c.fail(req{"id": 1, "op": "acquire", "keys": []string{"a"}}, "redis_error", "")
	require.Equal(t, "unexpected_state", f.Error.Type)
	require.True(t, strings.HasPrefix(f.Error.Message, `acquire "a": `), f.Error.Message)
	c.fail(req{"id": 2, "op": "release_all"}, "redis_error", "")
	c.ok(req{"id": 3, "op": "ping"})
}

func TestMetricsEndpoint(t *testing.T) {
	h := start(t)
	c := h.dial(testToken)
	c.ok(req{"id": 1, "op": "lease", "keys": []string{"k"}})
	c.ok(req{"id": 2, "op": "lease_release", "lease": "L1"})
	_, _, err := h.dialHeader(nil)
	require.Error(t, err)

	m := h.metrics()
	for _, name := range []string{bridge.MetricConnections, bridge.MetricRequests, bridge.MetricAcquireWait,
		bridge.MetricLeaseHold, bridge.MetricLeasesHeld, bridge.MetricRenewals, bridge.MetricLeasesLost,
		bridge.MetricRejected, "go_goroutines", "process_open_fds"} {
		require.Contains(t, m, "# TYPE "+name+" ", name)
	}
	require.Equal(t, "1", h.metric(bridge.MetricConnections))
	require.Equal(t, "1", h.metric(bridge.MetricRequests+`{op="lease",result="ok"}`))
	require.Equal(t, "1", h.metric(bridge.MetricAcquireWait+"_count"))
	require.Equal(t, "1", h.metric(bridge.MetricLeaseHold+"_count"))
}

// An observer that panics (a bug in metrics or logging code) hurts no one: the provider logs
// the panic, the request succeeds, and both connections keep their leases.
func TestPanickingObserverHurtsNoOne(t *testing.T) {
	h := start(t, func(c *bridge.Config) {
		c.Observer = provider.ObserverFunc(func(e provider.Event) {
			if e.Key == "boom" && e.Kind == provider.EventAcquired {
				panic("a bug in an observer")
			}
		})
	})
	bystander := h.dial(testToken)
	bystander.ok(req{"id": 1, "op": "lease", "keys": []string{"held"}})
	c := h.dial(testToken)
	c.ok(req{"id": 1, "op": "lease", "keys": []string{"mine"}})
	c.ok(req{"id": 2, "op": "acquire", "keys": []string{"boom"}, "owner": "o"})
	require.Equal(t, "o", h.owner("boom"))
	require.NotEmpty(t, h.owner("mine"))

	bystander.ok(req{"id": 2, "op": "ping"})
	require.NotEmpty(t, h.owner("held"))
}

func TestServesTLS(t *testing.T) {
	cert, pool := selfSignedCert(t)
	h := start(t, func(c *bridge.Config) { c.TLS = &tls.Config{Certificates: []tls.Certificate{cert}} })
	d := websocket.Dialer{TLSClientConfig: &tls.Config{RootCAs: pool}, Subprotocols: []string{bridge.Subprotocol}}
	ws, resp, err := d.Dial("wss://"+h.addr+"/ws", bearer(testToken))
	require.NoError(t, err)
	_ = resp.Body.Close()
	defer ws.Close()
	require.NoError(t, ws.WriteJSON(req{"id": 1, "op": "ping"}))
	var f frame
	require.NoError(t, ws.ReadJSON(&f)) // welcome
	require.Equal(t, "welcome", f.Type)
	require.NoError(t, ws.ReadJSON(&f))
	require.True(t, f.OK)

	_, _, err = h.dialHeader(bearer(testToken)) // plain ws:// to a TLS port
	require.Error(t, err)
}

// selfSignedCert makes a certificate for 127.0.0.1 and a pool that trusts it.
func selfSignedCert(t *testing.T) (tls.Certificate, *x509.CertPool) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "bridge test"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}
