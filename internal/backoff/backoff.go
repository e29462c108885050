// Package backoff paces the retries of a failing operation: a delay that starts at Initial,
// grows by Factor after every retry up to Max, and may be jittered.
package backoff

import (
	"math"
	"math/rand/v2"
	"time"
)

// Backoff is the delay before each retry of a failing operation: Initial, then grown by Factor
// after each retry, up to Max; with Jitter, each delay is shortened by a random part of it. It
// is a plain value, meant to be kept in the state of the loop it paces: Next and Reset allocate
// nothing. It is not safe for concurrent use.
type Backoff struct {
	// Initial is the first delay, and the first one again after Reset. Max does not cap it.
	Initial time.Duration
	// Max caps the growth of the delay: no delay grown by Factor exceeds it. 0 means no cap.
	Max time.Duration
	// Factor multiplies the delay after each retry. Below 1 (the zero value) it means 2: the
	// delay doubles.
	Factor float64
	// Jitter is the part of each delay that is random, from 0 to 1: Next returns between
	// (1 − Jitter) and all of the delay, evenly spread. 0.5 is stock Medusa's 50–100 %. 0
	// means none: Next returns the delay itself.
	Jitter float64
	// Rand returns the random numbers in [0, 1) that Jitter draws on. nil means math/rand/v2's
	// Float64; tests set it to make the delays certain.
	Rand func() float64

	next time.Duration // the next delay before jitter; 0 means Initial
}

// Doubling is a backoff without jitter that starts at initial and doubles up to max.
func Doubling(initial, max time.Duration) Backoff {
	return Backoff{Initial: initial, Max: max, Factor: 2}
}

// Next returns the delay before the next retry, jittered, and grows the one after it.
func (b *Backoff) Next() time.Duration {
	d := b.next
	if d == 0 {
		d = b.Initial
	}
	b.next = b.grow(d)
	return b.jitter(d)
}

// Reset starts the delays over from Initial, after a success.
func (b *Backoff) Reset() { b.next = 0 }

// grow is the delay after d: d times Factor, at most Max.
func (b *Backoff) grow(d time.Duration) time.Duration {
	f := b.Factor
	if f < 1 {
		f = 2
	}
	g := time.Duration(math.MaxInt64)
	if x := float64(d) * f; x < math.MaxInt64 {
		g = time.Duration(x)
	}
	if b.Max > 0 {
		g = min(g, b.Max)
	}
	return g
}

// jitter is what Next returns for the delay d: d less a random part of it up to Jitter.
func (b *Backoff) jitter(d time.Duration) time.Duration {
	if b.Jitter <= 0 {
		return d
	}
	j := min(b.Jitter, 1)
	r := b.Rand
	if r == nil {
		r = rand.Float64
	}
	return time.Duration(float64(d) * (1 - j + r()*j))
}
