package backoff_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/locktui/locktui/internal/backoff"
)

const ms = time.Millisecond

// fixed is a random source that always returns r.
func fixed(r float64) func() float64 { return func() float64 { return r } }

// nexts calls b.Next n times and returns the delays.
func nexts(b *backoff.Backoff, n int) []time.Duration {
	var out []time.Duration
	for range n {
		out = append(out, b.Next())
	}
	return out
}

var sequenceTests = []struct {
	name string
	b    backoff.Backoff
	want []time.Duration
}{
	{"doubling up to the cap", backoff.Doubling(100*ms, 1000*ms),
		[]time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1000 * ms, 1000 * ms}},
	{"a cap between two doublings", backoff.Doubling(100*ms, 150*ms),
		[]time.Duration{100 * ms, 150 * ms, 150 * ms}},
	{"no cap", backoff.Doubling(1*ms, 0),
		[]time.Duration{1 * ms, 2 * ms, 4 * ms, 8 * ms, 16 * ms}},
	{"factor 3", backoff.Backoff{Initial: 10 * ms, Max: time.Second, Factor: 3},
		[]time.Duration{10 * ms, 30 * ms, 90 * ms, 270 * ms, 810 * ms, time.Second}},
	{"factor 1.5", backoff.Backoff{Initial: 100 * ms, Max: time.Second, Factor: 1.5},
		[]time.Duration{100 * ms, 150 * ms, 225 * ms, 337500 * time.Microsecond}},
	{"factor 1 is constant", backoff.Backoff{Initial: 20 * ms, Max: time.Second, Factor: 1},
		[]time.Duration{20 * ms, 20 * ms, 20 * ms}},
	{"factor 0 doubles", backoff.Backoff{Initial: 20 * ms, Max: time.Second},
		[]time.Duration{20 * ms, 40 * ms, 80 * ms}},
	{"factor below 1 doubles", backoff.Backoff{Initial: 20 * ms, Max: time.Second, Factor: 0.5},
		[]time.Duration{20 * ms, 40 * ms, 80 * ms}},
	{"Initial above the cap is not capped", backoff.Doubling(2*time.Second, time.Second),
		[]time.Duration{2 * time.Second, time.Second, time.Second}},
	{"zero value", backoff.Backoff{}, []time.Duration{0, 0}},
	{"no overflow without a cap", backoff.Doubling(math.MaxInt64/2+1, 0),
		[]time.Duration{math.MaxInt64/2 + 1, math.MaxInt64, math.MaxInt64}},
	{"no overflow with a cap", backoff.Doubling(math.MaxInt64/2+1, math.MaxInt64-1),
		[]time.Duration{math.MaxInt64/2 + 1, math.MaxInt64 - 1, math.MaxInt64 - 1}},
	{"jitter with the smallest draw", backoff.Backoff{Initial: 100 * ms, Max: 400 * ms, Jitter: 0.5, Rand: fixed(0)},
		[]time.Duration{50 * ms, 100 * ms, 200 * ms, 200 * ms}},
	{"jitter with a middle draw", backoff.Backoff{Initial: 100 * ms, Max: 400 * ms, Jitter: 0.5, Rand: fixed(0.5)},
		[]time.Duration{75 * ms, 150 * ms, 300 * ms, 300 * ms}},
	{"jitter 1 with a middle draw", backoff.Backoff{Initial: 100 * ms, Max: 400 * ms, Jitter: 1, Rand: fixed(0.5)},
		[]time.Duration{50 * ms, 100 * ms, 200 * ms}},
	{"jitter above 1 counts as 1", backoff.Backoff{Initial: 100 * ms, Jitter: 3, Rand: fixed(0.25)},
		[]time.Duration{25 * ms, 50 * ms}},
	{"no jitter ignores Rand", backoff.Backoff{Initial: 100 * ms, Max: 400 * ms, Rand: fixed(0)},
		[]time.Duration{100 * ms, 200 * ms, 400 * ms}},
}

func TestNextSequences(t *testing.T) {
	for _, tc := range sequenceTests {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.b
			if got := nexts(&b, len(tc.want)); !slices.Equal(got, tc.want) {
				t.Errorf("Next × %d = %v, want %v", len(tc.want), got, tc.want)
			}
		})
	}
}

// The jittered delay grows from the delay itself, not from what Next returned: the cap holds
// for the delay, and each wait lies within its jitter range whatever the draws.
var jitterBoundTests = []struct {
	name   string
	jitter float64
	lo, hi float64 // the share of the delay Next may return
}{
	{"stock 50-100 %", 0.5, 0.5, 1},
	{"25 %", 0.25, 0.75, 1},
	{"full", 1, 0, 1},
}

func TestJitterBounds(t *testing.T) {
	for _, tc := range jitterBoundTests {
		t.Run(tc.name, func(t *testing.T) {
			b := backoff.Backoff{Initial: 10 * ms, Max: 640 * ms, Jitter: tc.jitter}
			plain := backoff.Doubling(10*ms, 640*ms)
			short := false
			for i := range 200 {
				d, got := plain.Next(), b.Next()
				lo, hi := time.Duration(float64(d)*tc.lo), d
				if got < lo || got > hi {
					t.Fatalf("Next #%d = %v, want within [%v, %v]", i+1, got, lo, hi)
				}
				short = short || got < hi
			}
			if !short {
				t.Errorf("Next returned the full delay 200 times: no jitter")
			}
		})
	}
}

func TestResetStartsOver(t *testing.T) {
	b := backoff.Doubling(100*ms, time.Second)
	nexts(&b, 5)
	b.Reset()
	if got, want := nexts(&b, 3), []time.Duration{100 * ms, 200 * ms, 400 * ms}; !slices.Equal(got, want) {
		t.Errorf("Next × 3 after Reset = %v, want %v", got, want)
	}
	b.Reset()
	b.Reset()
	if got := b.Next(); got != 100*ms {
		t.Errorf("Next after two Resets = %v, want %v", got, 100*ms)
	}
}

func TestCopiesAreIndependent(t *testing.T) {
	a := backoff.Doubling(100*ms, time.Second)
	a.Next()
	b := a // a value: the copy goes on from where a was
	if got, want := b.Next(), 200*ms; got != want {
		t.Errorf("copy's Next = %v, want %v", got, want)
	}
	if got, want := a.Next(), 200*ms; got != want {
		t.Errorf("original's Next after the copy's = %v, want %v", got, want)
	}
}

func TestNextAllocatesNothing(t *testing.T) {
	b := backoff.Backoff{Initial: ms, Max: time.Second, Factor: 2, Jitter: 0.5}
	if n := testing.AllocsPerRun(100, func() { b.Next(); b.Reset() }); n != 0 {
		t.Errorf("Next and Reset allocate %v times per run, want 0", n)
	}
}
