package events_test

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/events"
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

func TestSubscribeGivesUpWhenRedisNeverConfirms(t *testing.T) {
	events.SetSubscribeTimeout(t, 200*time.Millisecond)
	// A client as redisconn makes it (context deadlines cut I/O) with a read timeout far longer
	// than the test: only Subscribe's own bound can end the wait.
	client := redis.NewClient(&redis.Options{Addr: silentServer(t), ContextTimeoutEnabled: true,
		ReadTimeout: time.Minute, MaxRetries: -1})
	defer client.Close()
	errc := make(chan error, 1)
	go func() {
		sub, err := events.Subscribe(t.Context(), client, ns)
		if sub != nil {
			_ = sub.Close()
		}
		errc <- err
	}()
	select {
	case err := <-errc:
		require.Error(t, err)
		assert.Contains(t, err.Error(), "no confirmation from Redis within 200ms")
	case <-time.After(10 * time.Second):
		t.Fatal("Subscribe still waits for a server that never answers")
	}
}
