// Package sleep waits for a duration or until a context ends, whichever comes first.
package sleep

import (
	"context"
	"time"
)

// For waits d or until ctx ends; it reports false when ctx ended first (also when it had ended
// before the call), true when d has passed.
func For(ctx context.Context, d time.Duration) bool {
	if ctx.Err() != nil {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
