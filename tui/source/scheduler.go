package source

import (
	"context"
	"sync"
	"time"

	"github.com/locktui/locktui/internal/backoff"
)

// Retry pacing of every job that fails (the heartbeat, the subscriptions, the reads).
const (
	// RetryMin is the wait after the first failure in a row.
	RetryMin = 500 * time.Millisecond
	// RetryMax caps the wait, which doubles with each further failure.
	RetryMax = 30 * time.Second
)

// Job is one kind of the console's background work, run in rounds by a Scheduler. Its fields
// say when a round is due; Run does the work of one round and nothing else: no job sleeps,
// ticks or retries by itself.
type Job struct {
	// Name names the job, as the package documentation lists it.
	Name string
	// Run is one round. An error makes the next round wait for Retry.
	Run func(ctx context.Context) error
	// Every is the wait between the starts of two rounds while they succeed. nil or 0: the
	// next round waits for Trigger or Urge.
	Every func() time.Duration
	// Delay is the wait from a Trigger to the round, so that what arrives meanwhile is handled
	// by the same round. Default 0.
	Delay time.Duration
	// Gap is the least wait between the starts of two rounds that Trigger brings forward.
	// nil: none.
	Gap func() time.Duration
	// Retry paces the rounds after failures: after each, the next waits Retry.Next(), never less
	// than Every; a success resets it. The zero value means backoff.Doubling(RetryMin, RetryMax).
	Retry backoff.Backoff
	// Ready, if set, holds each round until it returns true; false means ctx ended.
	Ready func(ctx context.Context) bool
	// Failed, if set, is told of each failed round: the error, the failures in a row, and the
	// wait before the next round.
	Failed func(ctx context.Context, err error, failures int, wait time.Duration)
	// Done, if set, runs once ctx ended and the last round returned: it closes what the rounds
	// opened.
	Done func()

	mu    sync.Mutex
	ask   ask
	wake  chan struct{}
	added bool
}

type ask int

const (
	askNone    ask = iota
	askTrigger     // new work: due after Delay and Gap, not before a retry
	askUrge        // asked for: due at once
)

// Trigger says new work arrived for j: a round is due after Delay, no sooner than Gap after
// the last round started, and, after a failure, not before the retry. It never blocks;
// triggers before the round starts are served by that one round.
func (j *Job) Trigger() { j.request(askTrigger) }

// Urge asks for a round now, or as soon as the round under way ends, cutting a retry wait
// short: for what the operator asks for and for news that the cause of a failure is gone.
func (j *Job) Urge() { j.request(askUrge) }

func (j *Job) request(a ask) {
	j.mu.Lock()
	j.ask = max(j.ask, a)
	j.mu.Unlock()
	select {
	case j.wake <- struct{}{}:
	default:
	}
}

// take returns and clears what was asked for since the last call.
func (j *Job) take() ask {
	j.mu.Lock()
	defer j.mu.Unlock()
	a := j.ask
	j.ask = askNone
	return a
}

func (j *Job) every() time.Duration {
	if j.Every == nil {
		return 0
	}
	return j.Every()
}

// Scheduler runs a fixed set of Jobs, each in a goroutine of its own running the one loop
// (run, below), so every rule of when the console does what is in this file. The zero value
// is ready to use.
type Scheduler struct {
	mu      sync.Mutex
	jobs    []*Job
	running bool
}

// Add adds j, to be run by Run. A job belongs to one scheduler, added once, before Run.
func (s *Scheduler) Add(j *Job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running || j.added {
		panic("source: Scheduler.Add of " + j.Name + " after Run or to a second scheduler")
	}
	j.added = true
	j.wake = make(chan struct{}, 1)
	s.jobs = append(s.jobs, j)
}

// Run runs every job until ctx ends, and returns when all their rounds ended.
func (s *Scheduler) Run(ctx context.Context) {
	s.mu.Lock()
	s.running = true
	jobs := s.jobs
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Go(func() { run(ctx, j) })
	}
	wg.Wait()
}

// run is the one loop: the first round is due at once; after a round that succeeded, the
// next is due Every after its start (or when asked); after a failure, the retry's wait after
// its end. Trigger and Urge bring a round forward (see them). A round starts when it is due
// and Ready holds.
func run(ctx context.Context, j *Job) {
	retry := j.Retry
	if retry.Initial <= 0 {
		retry = backoff.Doubling(RetryMin, RetryMax)
	}
	if j.Done != nil {
		defer j.Done()
	}
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	var (
		due      = time.Now() // zero: when asked
		start    time.Time    // of the last round
		retryAt  time.Time    // after a failure: no Trigger brings a round before it
		failures int
	)
	for {
		for due.IsZero() || time.Now().Before(due) {
			var timer <-chan time.Time
			if !due.IsZero() {
				t.Reset(time.Until(due))
				timer = t.C
			}
			select {
			case <-ctx.Done():
				return
			case <-timer:
			case <-j.wake:
				due = asked(j, j.take(), due, start, retryAt)
			}
		}
		if j.Ready != nil && !j.Ready(ctx) {
			return
		}
		j.take() // what was asked for until now, this round serves
		start = time.Now()
		err := j.Run(ctx)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			failures, retryAt, due = 0, time.Time{}, time.Time{}
			retry.Reset()
			if every := j.every(); every > 0 {
				due = start.Add(every)
			}
			continue
		}
		failures++
		wait := max(retry.Next(), j.every())
		retryAt = time.Now().Add(wait)
		due = retryAt
		if j.Failed != nil {
			j.Failed(ctx, err, failures, wait)
		}
	}
}

// asked is when the next round is due after a, given when it was due, when the last round
// started and when a retry is due: never later than it was.
func asked(j *Job, a ask, due, start, retryAt time.Time) time.Time {
	now := time.Now()
	at := due
	switch a {
	case askUrge:
		at = now
	case askTrigger:
		at = now.Add(j.Delay)
		if j.Gap != nil {
			at = later(at, start.Add(j.Gap()))
		}
		at = later(at, retryAt)
	}
	if due.IsZero() || at.Before(due) {
		return at
	}
	return due
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
