package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
)

// lossReadTimeout bounds the read of Redis that explains a lost lease.
const lossReadTimeout = time.Second

// lostKeys are the keys a lost lease lost (all of its keys when the loss does not say).
func lostKeys(lease *provider.Lease) []string {
	var ce *provider.ConflictError
	if errors.As(lease.Err(), &ce) && len(ce.Keys) > 0 {
		return ce.Keys
	}
	return lease.Keys()
}

// explainLoss says why lease was lost, on a channel that gets one line: the provider's reason
// when it knows the cause (provider.LossReason: a restart or failover, a deadline passed without
// a confirmed renewal); or, read from Redis now, each lost key was deleted, taken by another owner (named), or
// replaced by a key of another type. The read is bounded by lossReadTimeout and runs in its own
// goroutine.
func explainLoss(ctx context.Context, ops *operator.Inspector, lease *provider.Lease) <-chan string {
	out := make(chan string, 1)
	if reason := provider.LossReason(lease.Err()); reason != "" {
		out <- reason
		return out
	}
	keys, owner := lostKeys(lease), lease.Owner()
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lossReadTimeout)
		defer cancel()
		parts := make([]string, 0, len(keys))
		for _, key := range keys {
			l, ok, err := ops.Get(ctx, key)
			switch {
			case err != nil:
				parts = append(parts, fmt.Sprintf("%q could not be read to tell why (%s)", key, oneLine(err.Error())))
			case !ok:
				parts = append(parts, fmt.Sprintf("%q was deleted by another client", key))
			case l.Foreign:
				parts = append(parts, fmt.Sprintf("%q was replaced by a key of another type", key))
			case l.Owner == owner:
				parts = append(parts, fmt.Sprintf("no renewal of %q was confirmed before the lease's deadline", key))
			default:
				parts = append(parts, fmt.Sprintf("%q was taken by %q", key, l.Owner))
			}
		}
		out <- strings.Join(parts, ", ")
	}()
	return out
}
