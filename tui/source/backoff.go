package source

import (
	"time"

	"github.com/locktui/locktui/internal/backoff"
)

// Backoff paces the retries of a failing feed: RetryMin after the first failure, doubling up
// to RetryMax. The zero value has no failures.
type Backoff struct {
	failures int
	delays   backoff.Backoff // set at the first failure in a row
	at       time.Time
}

// Wait is how long after now the next attempt may start.
func (b *Backoff) Wait(now time.Time) time.Duration { return max(b.at.Sub(now), 0) }

// Fail records a failure at now and reports whether it is the first in a row.
func (b *Backoff) Fail(now time.Time) (first bool) {
	if b.failures == 0 {
		b.delays = backoff.Doubling(RetryMin, RetryMax)
	}
	b.failures++
	b.at = now.Add(b.delays.Next())
	return b.failures == 1
}

// Due reports whether the next attempt may start at now.
func (b *Backoff) Due(now time.Time) bool { return !now.Before(b.at) }

// Reset forgets the failures after a success.
func (b *Backoff) Reset() { *b = Backoff{} }
