package budget

import (
	"context"
	"sync"
	"time"
)

// VirtualClock is a clock that only the limiter's sleeps move: a test runs a Limiter on it
// (UseVirtualClock) and reads how long the limiter made its callers wait, without waiting.
type VirtualClock struct {
	mu    sync.Mutex
	start time.Time
	now   time.Time
}

// UseVirtualClock puts l on a new VirtualClock and returns the clock.
func UseVirtualClock(l *Limiter) *VirtualClock {
	t := time.Unix(1_000_000, 0)
	c := &VirtualClock{start: t, now: t}
	l.SetClock(c.Now, c.Sleep)
	return c
}

// Now is the virtual time.
func (c *VirtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep moves the virtual time on by d at once; it returns ctx's error, as a real sleep that
// ctx ended would.
func (c *VirtualClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return ctx.Err()
}

// Elapsed is how long the limiter's sleeps took in all.
func (c *VirtualClock) Elapsed() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now.Sub(c.start)
}
