package source

import (
	"context"
	"time"

	"github.com/locktui/locktui/internal/sleep"
	"golang.org/x/time/rate"
)

// expiryEvery is the shortest wait between two re-reads of keys whose countdown reached zero:
// the keys that reach zero meanwhile are read together.
const expiryEvery = 100 * time.Millisecond

// RereadExpired is the updater of the keys whose countdown reached zero without news
// (Hub.NextExpired): it reads each of them again at once, at most one batch of up to
// KeyspaceReadBatch keys per expiryEvery and within the budget, and hands what it read to the
// hub, so the row turns GONE or shows its new TTL instead of sitting at 0 until the next full
// refresh (an `expired` notification can be lost; without notifications the next poll may be
// far when the budget stretched it). A failed read is retried with Backoff. It returns when
// ctx ends or the hub stops.
func (s *Source) RereadExpired(ctx context.Context, hub *Hub) {
	lim := rate.NewLimiter(rate.Every(expiryEvery), 1)
	var retry Backoff
	for {
		if lim.Wait(ctx) != nil {
			return
		}
		keys, ok := hub.NextExpired(ctx, KeyspaceReadBatch)
		if !ok {
			return
		}
		for {
			_, err := s.ReadInto(ctx, hub, keys)
			if err == nil {
				retry.Reset()
				break
			}
			now := time.Now()
			retry.Fail(now)
			if !sleep.For(ctx, retry.Wait(now)) {
				return
			}
		}
	}
}
