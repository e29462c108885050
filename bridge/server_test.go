package bridge_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
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
	"github.com/locktui/locktui/redisconn"
)

// Defect: on SIGTERM the bridge deleted the leases' keys and only then closed the connections,
// so another process entered before the holder was told. Now the client is told first
// (going_away), its waits end with shutting_down, nothing new starts, and it releases its own
// leases; a lease it does not release is freed only ClientTimeout after its last frame.
func TestShutdownTellsTheClientsBeforeAnyKeyIsFreed(t *testing.T) {
	const timeout = 400 * time.Millisecond
	h := start(t, func(c *bridge.Config) { c.ClientTimeout = timeout })
	c := h.dial(testToken)
	kept := c.ok(req{"id": 1, "op": "lease", "keys": []string{"kept"}})["lease"].(string)
	c.ok(req{"id": 2, "op": "lease", "keys": []string{"left"}})
	require.NoError(t, h.rdb.Set(context.Background(), namespace+"busy", "someone", 0).Err())
	c.send(req{"id": 3, "op": "acquire", "keys": []string{"busy"}, "owner": "o", "await_queue": true})
	c.ok(req{"id": 4, "op": "ping"}) // the queued acquire is in flight now

	stopped := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond) // a drain of 1.1 s
		defer cancel()
		stopped <- h.shutdown(ctx)
	}()
	var gone frame
	for waitEnded := false; gone.Type != "going_away" || !waitEnded; {
		f := c.recv()
		if f.Type == "" {
			require.JSONEq(t, "3", string(f.ID))
			// The provider's own conflict for the wait the drain cut short, as every error reply
			// carries the provider's message.
			requireError(t, f, "shutting_down", `Failed to acquire lock for key "busy"`)
			waitEnded = true
			continue
		}
		gone = f
	}
	require.Positive(t, gone.DrainMS)
	require.NotEmpty(t, h.owner("kept"), "nothing is freed before the client was told")
	require.NotEmpty(t, h.owner("left"))
	c.fail(req{"id": 5, "op": "lease", "keys": []string{"new"}}, "shutting_down", "")
	c.fail(req{"id": 6, "op": "acquire", "keys": []string{"new"}}, "shutting_down", "")
	require.Empty(t, h.owner("new"))
	require.Equal(t, req{"released": true}, c.ok(req{"id": 7, "op": "lease_release", "lease": kept}),
		"jobs that finish during the drain release as usual")
	// The client goes on with its heartbeat until the drain ends.
	var last time.Time
	for id := 8; ; id++ {
		last = time.Now() // the client's last frame leaves after this
		c.send(req{"id": id, "op": "ping"})
		require.NoError(t, c.ws.SetReadDeadline(time.Now().Add(replyWait)))
		_, _, err := c.ws.ReadMessage()
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			require.Equal(t, websocket.CloseGoingAway, ce.Code)
			break
		}
		require.NoError(t, err)
		time.Sleep(timeout / 4) // the heartbeat's period
	}
	require.NotEmpty(t, h.owner("left"), "the lease the client did not release outlives the close")
	require.Eventually(t, func() bool { return h.owner("left") == "" }, eventually, tick)
	require.GreaterOrEqual(t, time.Since(last), timeout, "and is freed no earlier than the client timeout after its last frame")
	require.NoError(t, <-stopped)

	_, _, err := h.dialHeader(bearer(testToken))
	require.Error(t, err, "a stopped bridge accepts no connection")
}

// A client that holds no lease and runs nothing is closed at once, without waiting out the drain.
func TestShutdownClosesAnIdleConnectionAtOnce(t *testing.T) {
	h := start(t)
	c := h.dial(testToken)
	started := time.Now()
	stopped := make(chan error, 1)
	go func() { stopped <- h.stop() }()
	require.Equal(t, "going_away", c.recv().Type)
	c.expectClose(websocket.CloseGoingAway)
	require.NoError(t, <-stopped)
	require.Less(t, time.Since(started), replyWait/2, "the drain does not wait for an idle connection")
}

// With Redis stalled, a shutdown cannot finish: Shutdown still returns once its context is
// done, says what it left, and deletes nothing it could not be sure of: the leases stop being
// renewed and their keys expire with their TTL.
func TestShutdownCutShortLeavesTheLeasesToExpire(t *testing.T) {
	logs := &logRecorder{}
	h := start(t, stallable(t), recordLogs(logs))
	var keys []string
	for i := range 2 {
		c := h.dial(testToken)
		for j := range 3 {
			key := fmt.Sprintf("k%d-%d", i, j)
			c.ok(req{"id": j, "op": "lease", "keys": []string{key}, "expire": 2})
			keys = append(keys, key)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- h.shutdown(ctx) }()
	cancel()
	var err error
	select {
	case err = <-stopped:
	case <-time.After(replyWait):
		t.Fatal("Shutdown did not return once its context was done")
	}
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "6 lease(s) left to expire")
	left := logs.await(t, "shutdown cut short: the leases left stop being renewed and their keys expire with their TTL")
	require.Equal(t, int64(6), left["leases_left"].Int64())
	require.Equal(t, int64(2), left["connections_open"].Int64())
	for _, key := range keys {
		require.NotEmpty(t, h.owner(key), "nothing is deleted")
	}
	require.Eventually(t, func() bool {
		for _, key := range keys {
			if h.owner(key) != "" {
				return false
			}
		}
		return true
	}, eventually, tick, "the keys expire with their TTL")
	require.Eventually(t, func() bool { return h.metric(bridge.MetricConnections) == "0" }, eventually, tick)
}

func TestHealthReadinessAndRedisErrors(t *testing.T) {
	h := start(t)
	c := h.dial(testToken)
	body, status := h.get("/healthz")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "ok\n", body)
	body, status = h.get("/readyz")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "ok\n", body)
	// A policy that can evict held locks is said, the bridge still ready.
	require.NoError(t, h.rdb.ConfigSet(context.Background(), "maxmemory-policy", "volatile-lru").Err())
	body, status = h.get("/readyz")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "ok\nwarning: "+redisconn.EvictionWarning("volatile-lru")+"\n", body)

	h.redis.Stop()
	body, status = h.get("/readyz")
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Equal(t, "redis: not reachable\n", body, "the reason (with the address) goes to the log only")
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
