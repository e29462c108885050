package source

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/backoff"
)

// rounds records what a job's rounds and its Failed hook saw.
type rounds struct {
	mu     sync.Mutex
	starts []time.Time
	ends   []time.Time
	fails  []int
	waits  []time.Duration
}

func (r *rounds) started() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.starts)
}

// job returns a job whose round i (from 0) fails when fail(i), recorded in r.
func (r *rounds) job(fail func(i int) bool) *Job {
	return &Job{
		Name: "test",
		Run: func(ctx context.Context) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			i := len(r.starts)
			r.starts = append(r.starts, time.Now())
			r.ends = append(r.ends, time.Now())
			if fail(i) {
				return errors.New("round failed")
			}
			return nil
		},
		Failed: func(_ context.Context, _ error, failures int, wait time.Duration) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.fails = append(r.fails, failures)
			r.waits = append(r.waits, wait)
		},
	}
}

// schedule runs jobs until the test ends, and checks that Run returns once ctx ended.
func schedule(t *testing.T, jobs ...*Job) {
	t.Helper()
	var s Scheduler
	for _, j := range jobs {
		s.Add(j)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		s.Run(ctx)
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Scheduler.Run did not return after its context ended")
		}
	})
}

func await(t *testing.T, what string, ok func() bool) {
	t.Helper()
	require.Eventually(t, ok, 15*time.Second, time.Millisecond, "never: %s", what)
}

// A job that succeeds runs at once, then every Every between starts.
func TestSchedulerRunsAJobEveryPeriod(t *testing.T) {
	var r rounds
	j := r.job(func(int) bool { return false })
	j.Every = func() time.Duration { return 20 * time.Millisecond }
	schedule(t, j)
	await(t, "four rounds", func() bool { return r.started() >= 4 })
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := 1; i < len(r.starts); i++ {
		assert.GreaterOrEqual(t, r.starts[i].Sub(r.starts[i-1]), 20*time.Millisecond, "round %d", i)
	}
}

// Failures in a row wait the job's backoff, doubling to its cap; a success resets it, and
// the next failure waits the first delay again.
func TestSchedulerBacksOffOnFailureAndResetsOnSuccess(t *testing.T) {
	var r rounds
	// Rounds 0-3 fail, 4 succeeds, 5 fails, 6 on succeed.
	j := r.job(func(i int) bool { return i < 4 || i == 5 })
	j.Retry = backoff.Doubling(10*time.Millisecond, 40*time.Millisecond)
	j.Every = func() time.Duration { return 5 * time.Millisecond } // below the backoff: it does not count
	schedule(t, j)
	await(t, "seven rounds", func() bool { return r.started() >= 7 })
	r.mu.Lock()
	defer r.mu.Unlock()
	ms := time.Millisecond
	assert.Equal(t, []int{1, 2, 3, 4, 1}, r.fails[:5], "failures in a row, reset by the success")
	assert.Equal(t, []time.Duration{10 * ms, 20 * ms, 40 * ms, 40 * ms, 10 * ms}, r.waits[:5])
	for i, round := range []int{0, 1, 2, 3, 5} {
		assert.GreaterOrEqual(t, r.starts[round+1].Sub(r.ends[round]), r.waits[i], "retry after round %d", round)
	}
}

// A failure never makes a job run more often than its period.
func TestSchedulerRetriesNoSoonerThanThePeriod(t *testing.T) {
	var r rounds
	j := r.job(func(i int) bool { return i == 0 })
	j.Retry = backoff.Doubling(time.Millisecond, time.Millisecond)
	j.Every = func() time.Duration { return 30 * time.Millisecond }
	schedule(t, j)
	await(t, "the retry", func() bool { return r.started() >= 2 })
	r.mu.Lock()
	defer r.mu.Unlock()
	assert.Equal(t, []time.Duration{30 * time.Millisecond}, r.waits)
}

// Triggers coalesce: those that arrive before a round starts are served by it, after Delay.
// Urge cuts a retry wait short.
func TestSchedulerTriggerAndUrge(t *testing.T) {
	var r rounds
	j := r.job(func(i int) bool { return i == 1 })
	j.Delay = 20 * time.Millisecond
	j.Retry = backoff.Doubling(time.Hour, time.Hour)
	schedule(t, j)
	await(t, "the first round, at once", func() bool { return r.started() == 1 })
	asked := time.Now()
	for range 10 {
		j.Trigger()
	}
	await(t, "the triggered round", func() bool { return r.started() == 2 })
	r.mu.Lock()
	assert.GreaterOrEqual(t, r.starts[1].Sub(asked), j.Delay)
	r.mu.Unlock()
	// Round 1 failed: the retry is an hour away, and Urge does not wait for it.
	j.Urge()
	await(t, "the urged round", func() bool { return r.started() == 3 })
}

// A round waits for Ready; Run returns once ctx ends, from a wait and from a round.
func TestSchedulerWaitsForReadyAndStopsWithItsContext(t *testing.T) {
	ready := make(chan struct{})
	var r rounds
	gated := r.job(func(int) bool { return false })
	gated.Ready = func(ctx context.Context) bool {
		select {
		case <-ready:
			return true
		case <-ctx.Done():
			return false
		}
	}
	inRound := make(chan struct{})
	blocking := &Job{Name: "blocking", Run: func(ctx context.Context) error {
		close(inRound)
		<-ctx.Done()
		return ctx.Err()
	}}
	waiting := &Job{Name: "waiting", Run: func(context.Context) error { return nil },
		Every: func() time.Duration { return time.Hour }}
	schedule(t, gated, blocking, waiting)
	<-inRound
	assert.Zero(t, r.started(), "not ready yet")
	close(ready)
	await(t, "the round once ready", func() bool { return r.started() == 1 })
	// The cleanup cancels: the blocking round, the hour's wait and the gated job all end.
}

// The due-time rules of Trigger and Urge.
var askedTests = []struct {
	name                 string
	ask                  ask
	due, start, retryAt  time.Duration // from now; -1 h: zero (none)
	delay, gap, wantFrom time.Duration
}{
	{name: "nothing asked keeps the due time", ask: askNone, due: time.Second, start: -time.Hour, retryAt: -time.Hour, wantFrom: time.Second},
	{name: "trigger waits its delay", ask: askTrigger, due: -time.Hour, start: -time.Hour, retryAt: -time.Hour, delay: 100 * time.Millisecond, wantFrom: 100 * time.Millisecond},
	{name: "trigger waits the gap since the last start", ask: askTrigger, due: -time.Hour, start: -50 * time.Millisecond, retryAt: -time.Hour, gap: 200 * time.Millisecond, wantFrom: 150 * time.Millisecond},
	{name: "trigger waits for a retry", ask: askTrigger, due: 5 * time.Second, start: -time.Second, retryAt: 5 * time.Second, wantFrom: 5 * time.Second},
	{name: "trigger never delays a round due sooner", ask: askTrigger, due: 10 * time.Millisecond, start: -time.Hour, retryAt: -time.Hour, delay: time.Second, wantFrom: 10 * time.Millisecond},
	{name: "urge cuts a retry short", ask: askUrge, due: 5 * time.Second, start: -time.Second, retryAt: 5 * time.Second, wantFrom: 0},
}

func TestAsked(t *testing.T) {
	for _, tc := range askedTests {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Now()
			at := func(d time.Duration) time.Time {
				if d == -time.Hour {
					return time.Time{}
				}
				return now.Add(d)
			}
			j := &Job{Delay: tc.delay}
			if tc.gap > 0 {
				j.Gap = func() time.Duration { return tc.gap }
			}
			got := asked(j, tc.ask, at(tc.due), at(tc.start), at(tc.retryAt))
			// asked reads the clock itself: allow what passed since now.
			assert.WithinRange(t, got, now.Add(tc.wantFrom), time.Now().Add(tc.wantFrom),
				"asked(%v) = %v from now, want %v", tc.ask, got.Sub(now), tc.wantFrom)
		})
	}
}
