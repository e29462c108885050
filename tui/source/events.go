package source

import (
	"context"
	"time"

	"github.com/locktui/locktui/events"
	"github.com/locktui/locktui/tui/store"
)

// Forward passes the lock events of ch to the hub until ch is closed or ctx ends. Events are
// stamped with the time they arrived, so rates do not depend on the publishers' clocks.
func (h *Hub) Forward(ctx context.Context, ch <-chan events.Event) {
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-ch:
			if !ok {
				return
			}
			h.Event(store.Event{Kind: e.Kind, Key: e.Key, Owner: e.Owner, Time: time.Now()})
		}
	}
}
