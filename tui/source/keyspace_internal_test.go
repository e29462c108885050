package source

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/testsupport/redistest"
)

func TestSubscribeKeyspaceGivesUpWhenRedisNeverConfirms(t *testing.T) {
	old := subscribeTimeout
	subscribeTimeout = 200 * time.Millisecond
	t.Cleanup(func() { subscribeTimeout = old })
	// A client as redisconn makes it (context deadlines cut I/O) with a read timeout far longer
	// than the test: only the subscription's own bound can end the wait.
	client := redis.NewClient(&redis.Options{Addr: redistest.Silent(t), ContextTimeoutEnabled: true,
		ReadTimeout: time.Minute, MaxRetries: -1})
	defer client.Close()
	src := New(Options{Client: client})
	errc := make(chan error, 1)
	go func() {
		ks, err := src.SubscribeKeyspace(t.Context(), 0, nil)
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
