package source

import (
	"context"
	"sync"
	"time"
)

// DefaultBudget is the commands per second the console's own reads may use (see the package
// documentation).
const DefaultBudget = 20000

// Limiter is a token bucket of commands per second. The zero rate means unlimited. A caller
// takes the cost of what it already sent and waits when the bucket is in debt, so the average
// rate over any second stays at the budget.
type Limiter struct {
	rate  float64 // tokens per second; 0 = unlimited
	burst float64

	mu     sync.Mutex
	tokens float64
	last   time.Time
	now    func() time.Time
}

// NewLimiter returns a limiter of perSecond commands per second (<= 0: unlimited). Its burst
// is a tenth of a second's worth, so no one-second window sees more than 1.1 × perSecond plus
// the batch that ran ahead.
func NewLimiter(perSecond int) *Limiter {
	l := &Limiter{now: time.Now}
	if perSecond > 0 {
		l.rate = float64(perSecond)
		l.burst = max(float64(perSecond)/10, 1)
		l.tokens = l.burst
	}
	return l
}

// Rate returns the budget in commands per second (0: unlimited).
func (l *Limiter) Rate() int { return int(l.rate) }

// Take charges n commands and returns how long the caller must wait before sending more.
func (l *Limiter) Take(n int) time.Duration {
	if l == nil || l.rate == 0 {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if !l.last.IsZero() {
		l.tokens = min(l.burst, l.tokens+now.Sub(l.last).Seconds()*l.rate)
	}
	l.last = now
	l.tokens -= float64(n)
	if l.tokens >= 0 {
		return 0
	}
	return time.Duration(-l.tokens / l.rate * float64(time.Second))
}

// Wait charges n commands and waits until the bucket is out of debt or ctx ends.
func (l *Limiter) Wait(ctx context.Context, n int) error {
	d := l.Take(n)
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
