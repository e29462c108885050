package provider_test

import (
	"context"
	"testing"
	"time"

	"github.com/locktui/locktui/provider"
	"github.com/stretchr/testify/require"
)

// A failed multi-key Acquire leaves a key the owner already held as it was: still held, with the
// lifetime it had before the call, although the call re-entered it (and rewrote its TTL) before
// finding another key busy.
func TestFailedAcquireRestoresTheTTLOfKeysTheOwnerHeld(t *testing.T) {
	cases := []struct {
		name    string
		before  time.Duration // k's TTL before the call; 0: none
		expire  time.Duration
		queue   bool
		wantTTL int64 // whole seconds as Redis rounds them, -1: none
	}{
		{"TTL kept by a call with NoExpiry", 100 * time.Second, provider.NoExpiry, false, 100},
		{"TTL kept by a call with the default Expire", 100 * time.Second, 0, false, 100},
		{"TTL kept by a call with another Expire", 100 * time.Second, 5 * time.Second, false, 100},
		{"no expiry kept", 0, 5 * time.Second, false, -1},
		{"queued call that times out", 100 * time.Second, provider.NoExpiry, true, 100},
		{"queued call with Expire that times out", 0, 5 * time.Second, true, -1},
	}
	for _, c := range cases {
		// k is taken before the busy key (a queued call holds it while it waits) or after it
		// (a queued call lets it go before it waits).
		for _, busy := range []string{"z", "a"} {
			t.Run(c.name+"/busy "+busy, func(t *testing.T) {
				e := newEnv(t, &provider.Options{MaximumRetryInterval: 20 * time.Millisecond})
				e.Set("k", "o", c.before)
				e.Set(busy, "other", 0)
				call, cancel := context.WithTimeout(ctx(t), 100*time.Millisecond)
				defer cancel()
				err := e.P.Acquire(call, []string{"k", busy}, provider.AcquireOptions{Owner: "o", Expire: c.expire, AwaitQueue: c.queue})
				require.ErrorIs(t, err, provider.ErrNotAcquired)
				e.RequireOwner("k", "o")
				e.RequireOwner(busy, "other")
				if c.wantTTL < 0 {
					require.Equal(t, int64(-1), e.ttl("k"), "k still never expires")
					return
				}
				got := e.ttl("k")
				require.GreaterOrEqual(t, got, c.wantTTL-2, "k keeps the lifetime it had")
				require.LessOrEqual(t, got, c.wantTTL)
			})
		}
	}
}
