package source

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// silentServer accepts TCP connections and never answers: what a stalled Redis (stopped with
// SIGSTOP, behind a hung proxy) looks like to a client. It returns the address.
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

func TestSubscribeKeyspaceGivesUpWhenRedisNeverConfirms(t *testing.T) {
	old := subscribeTimeout
	subscribeTimeout = 200 * time.Millisecond
	t.Cleanup(func() { subscribeTimeout = old })
	// A client as redisconn makes it (context deadlines cut I/O) with a read timeout far longer
	// than the test: only the subscription's own bound can end the wait.
	client := redis.NewClient(&redis.Options{Addr: silentServer(t), ContextTimeoutEnabled: true,
		ReadTimeout: time.Minute, MaxRetries: -1})
	defer client.Close()
	src := New(Options{Client: client})
	errc := make(chan error, 1)
	go func() {
		ks, err := src.SubscribeKeyspace(t.Context(), 0)
		if ks != nil {
			ks.Close()
		}
		errc <- err
	}()
	select {
	case err := <-errc:
		require.Error(t, err)
		assert.Contains(t, err.Error(), "no confirmation from Redis within 200ms")
	case <-time.After(10 * time.Second):
		t.Fatal("SubscribeKeyspace still waits for a server that never answers")
	}
}
