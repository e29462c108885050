// Package budget paces the reads the console and the CLI make of a Redis server they watch: a
// token bucket of cost units a second, in which a read is one unit and a SCAN the keys it
// examines (docs/console-cost.md).
package budget

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/locktui/locktui/internal/sleep"
)

// Default is the cost per second the console's own reads, and the CLI's walks of the
// namespace, may use, in commands, with a SCAN counted as the keys it examines
// (docs/console-cost.md).
const Default = 20000

// Limiter is a token bucket of cost units per second, on golang.org/x/time/rate. The zero rate
// means unlimited. A caller takes the cost of what it is about to send and waits when the
// bucket is in debt, so the average rate over any second stays at the budget; a cost larger
// than the burst is taken in burst-sized parts, and the caller waits for the last.
//
// Its callers charge a read (GET, PTTL) one unit and a SCAN operator.ScanCount: the keys of the
// whole database it examines (MATCH filters after the walk), not one command. A walk of a
// database that holds more than locks therefore slows down with the size of the database
// instead of loading Redis with SCANs.
type Limiter struct {
	lim *rate.Limiter // nil: unlimited

	mu      sync.Mutex
	charged int64
	now     func() time.Time
	// sleep waits d or until ctx ends; tests replace it (with now) by a virtual clock.
	sleep func(ctx context.Context, d time.Duration) error
}

// New returns a limiter of perSecond units per second (<= 0: unlimited). Its burst is a
// tenth of a second's worth, so no one-second window sees more than 1.1 × perSecond plus the
// batch that ran ahead.
func New(perSecond int) *Limiter {
	l := &Limiter{now: time.Now, sleep: sleepUntilDone}
	if perSecond > 0 {
		l.lim = rate.NewLimiter(rate.Limit(perSecond), max(perSecond/10, 1))
	}
	return l
}

// SetClock replaces the limiter's clock and its sleep (time.Now and a sleep that ctx ends): a
// test runs the limiter on a virtual clock with it.
func (l *Limiter) SetClock(now func() time.Time, sleep func(ctx context.Context, d time.Duration) error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.now, l.sleep = now, sleep
}

// Now reads the limiter's clock: time.Now, or the one SetClock gave it. What times a paced walk
// (a progress line) reads it, so that it follows a virtual clock too.
func (l *Limiter) Now() time.Time {
	if l == nil { // unlimited, as for Take and Wait
		return time.Now()
	}
	l.mu.Lock()
	now := l.now
	l.mu.Unlock()
	return now()
}

// Rate returns the budget in units per second (0: unlimited).
func (l *Limiter) Rate() int {
	if l.lim == nil {
		return 0
	}
	return int(l.lim.Limit())
}

// Charged returns the cost charged so far, whatever the rate (also when unlimited).
func (l *Limiter) Charged() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.charged
}

// Take charges n units and returns how long the caller must wait before sending more.
func (l *Limiter) Take(n int) time.Duration {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.charged += int64(n)
	if l.lim == nil {
		return 0
	}
	now := l.now()
	burst := l.lim.Burst()
	var wait time.Duration
	for {
		part := min(n, burst)
		wait = max(wait, l.lim.ReserveN(now, part).DelayFrom(now))
		if n -= part; n <= 0 {
			return wait
		}
	}
}

// Wait charges n units and waits until the bucket is out of debt or ctx ends.
func (l *Limiter) Wait(ctx context.Context, n int) error {
	d := l.Take(n)
	if d <= 0 {
		return ctx.Err()
	}
	l.mu.Lock()
	sleep := l.sleep
	l.mu.Unlock()
	return sleep(ctx, d)
}

// sleepUntilDone is the Limiter's default sleep: ctx's error when ctx ends first.
func sleepUntilDone(ctx context.Context, d time.Duration) error {
	if !sleep.For(ctx, d) {
		return ctx.Err()
	}
	return nil
}
