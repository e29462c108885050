package events_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/events"
	"github.com/locktui/locktui/internal/testsupport/redistest"
)

func TestSubscribeGivesUpWhenRedisNeverConfirms(t *testing.T) {
	events.SetSubscribeTimeout(t, 200*time.Millisecond)
	// A client as redisconn makes it (context deadlines cut I/O) with a read timeout far longer
	// than the test: only Subscribe's own bound can end the wait.
	client := redis.NewClient(&redis.Options{Addr: redistest.Silent(t), ContextTimeoutEnabled: true,
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
