package events

import (
	"testing"
	"time"
)

// SetSubscribeTimeout shortens the wait for a subscription's confirmation until t ends.
func SetSubscribeTimeout(t testing.TB, d time.Duration) {
	old := subscribeTimeout
	subscribeTimeout = d
	t.Cleanup(func() { subscribeTimeout = old })
}
