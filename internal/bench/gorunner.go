package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/provider"
	"github.com/locktui/locktui/redisconn"
)

// GoImpl runs scenarios in-process with the Go provider, on a client opened with redisconn.Open
// (go-redis defaults: a pool of 10 connections per GOMAXPROCS), as a Go service would.
type GoImpl struct {
	// ImplName is the name in the report; default "go".
	ImplName string
	// Options tune the provider (nil: stock Medusa's defaults); Namespace is set per scenario.
	Options *provider.Options
	// Wrap, when set, turns each scenario's provider into what is measured (e.g. an
	// instrumented or deliberately broken executor in tests); nil measures the provider.
	Wrap func(*provider.Provider) Executor
}

// Executor is what the Go runner measures: the provider's Execute, or a peer's obtain, job and
// release (see PeerImpl). An execute that gives up waiting for the key fails with
// provider.ErrTimedOut (or, from a peer, errNotObtained), counted as a timeout.
type Executor interface {
	Execute(ctx context.Context, keys []string, job func(ctx context.Context) error, opts provider.ExecuteOptions) error
}

// Name returns ImplName, default "go".
func (g GoImpl) Name() string {
	if g.ImplName == "" {
		return "go"
	}
	return g.ImplName
}

// Open connects the lock client and the counter client and checks that Redis answers.
func (g GoImpl) Open(ctx context.Context, env Env) (Runner, error) {
	var opts provider.Options
	if g.Options != nil {
		opts = *g.Options
	}
	opts.FairQueue = opts.FairQueue || env.FairQueue
	var providers []*provider.Provider // closed with the runner: their listeners linger otherwise
	r, err := openGoRunner(ctx, g.Name(), env.RedisURL, func(locks redis.UniversalClient) func(string) Executor {
		return func(namespace string) Executor {
			o := opts
			o.Namespace = namespace
			p := provider.New(locks, &o)
			providers = append(providers, p)
			if g.Wrap != nil {
				return g.Wrap(p)
			}
			return p
		}
	})
	if err != nil {
		return nil, err
	}
	r.onClose = func() {
		for _, p := range providers {
			p.Close()
		}
	}
	return r, nil
}

// openGoRunner opens the in-process runner of GoImpl and PeerImpl: a lock client and a counter
// client from redisconn.Open, and the executors that newExec makes on the lock client, one per
// scenario (given its namespace).
func openGoRunner(ctx context.Context, name, url string, newExec func(locks redis.UniversalClient) func(namespace string) Executor) (*goRunner, error) {
	locks, err := redisconn.Open(url, redisconn.TLSFiles{})
	if err != nil {
		return nil, err
	}
	counter, err := redisconn.Open(url, redisconn.TLSFiles{})
	if err != nil {
		_ = locks.Close()
		return nil, err
	}
	if err := locks.Ping(ctx).Err(); err != nil {
		_ = locks.Close()
		_ = counter.Close()
		return nil, fmt.Errorf("%s: redis %s does not answer: %w", name, redisconn.Describe(url), err)
	}
	return &goRunner{name: name, newExec: newExec(locks), locks: locks, counter: counter}, nil
}

type goRunner struct {
	name    string
	newExec func(namespace string) Executor
	locks   redis.UniversalClient
	counter redis.UniversalClient
	onClose func() // closes what newExec made; nil: nothing
}

func (r *goRunner) Close() error {
	if r.onClose != nil {
		r.onClose()
	}
	return errors.Join(r.locks.Close(), r.counter.Close())
}

// goWorker is one worker's tally; merged into Raw after the run.
type goWorker struct {
	completed int
	timeouts  int
	errors    int
	firstErr  error
	wait      []float64
	latency   []float64
	holdSum   float64   // of the executes counted in completed
	starts    []float64 // Unix ms of each job's start, as wait
}

// shared is the state every worker of one scenario updates from inside its jobs.
type shared struct {
	inFlight []atomic.Int32 // per key index: jobs of this process currently holding it
	overlaps atomic.Int64
	redisMax atomic.Int64
}

func (s *shared) observeRedis(v int64) {
	for {
		cur := s.redisMax.Load()
		if v <= cur || s.redisMax.CompareAndSwap(cur, v) {
			return
		}
	}
}

// Run runs spec's workers for its duration and returns what they observed.
func (r *goRunner) Run(ctx context.Context, spec Spec) (*Raw, error) {
	p := r.newExec(spec.Namespace)
	execOpts := provider.ExecuteOptions{Timeout: seconds(spec.TimeoutS), Expire: seconds(spec.ExpireS)}
	empty := func(context.Context) error { return nil }
	for i := 0; i < spec.Warmup; i++ {
		if err := p.Execute(ctx, []string{spec.WarmupKey}, empty, execOpts); err != nil {
			return nil, fmt.Errorf("%s: warm-up execute: %w", r.name, err)
		}
	}
	if spec.Warmup > 0 {
		// One concurrent round, each worker on a key of its own, fills the connection pool.
		errs := make([]error, spec.Workers)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() {
				errs[i] = p.Execute(ctx, []string{spec.WarmupKey + ":" + strconv.Itoa(i)}, empty, execOpts)
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return nil, fmt.Errorf("%s: warm-up execute: %w", r.name, err)
		}
	}
	if spec.CounterKey != "" && !spec.KeepCounter {
		if err := r.counter.Del(ctx, spec.CounterKey).Err(); err != nil {
			return nil, fmt.Errorf("%s: reset counter: %w", r.name, err)
		}
	}

	st := &shared{inFlight: make([]atomic.Int32, len(spec.Keys))}
	workers := make([]goWorker, spec.Workers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	var windowStart, deadline time.Time
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r.work(ctx, p, spec, execOpts, st, &workers[i], i%len(spec.Keys), deadline)
		}()
	}
	late := waitUntil(ctx, spec.StartAtUnixMs)
	cpu0 := processCPU()
	windowStart = time.Now()
	deadline = windowStart.Add(spec.Duration())
	close(start) // publishes deadline to the workers
	wg.Wait()
	drained := time.Since(deadline)
	cpu := processCPU() - cpu0

	raw := &Raw{
		Completed: make([]int, len(workers)),
		Overlaps:  int(st.overlaps.Load()),
		RedisMax:  st.redisMax.Load(),
		WindowMs:  ms(deadline.Sub(windowStart)),
		DrainMs:   ms(max(drained, 0)),
		Runtime:   runtime.Version(),

		WindowStartUnixMs: unixMs(windowStart),
		StartLateMs:       ms(late),
		CPUMs:             ms(cpu),
	}
	if spec.CounterKey != "" {
		raw.CSStartUnixMs = make([][]float64, len(workers))
	}
	for i, w := range workers {
		raw.Completed[i] = w.completed
		raw.Timeouts += w.timeouts
		raw.Errors += w.errors
		if w.firstErr != nil && raw.FirstError == "" {
			raw.FirstError = w.firstErr.Error()
		}
		raw.WaitMs = append(raw.WaitMs, w.wait...)
		raw.LatencyMs = append(raw.LatencyMs, w.latency...)
		raw.HoldMsSum += w.holdSum
		if raw.CSStartUnixMs != nil {
			raw.CSStartUnixMs[i] = w.starts
		}
	}
	return raw, ctx.Err()
}

// work is one worker's loop: execute, tally, repeat until the deadline. A timeout is counted and
// the loop goes on; any other error is recorded and ends this worker.
func (r *goRunner) work(ctx context.Context, p Executor, spec Spec, execOpts provider.ExecuteOptions,
	st *shared, w *goWorker, keyIdx int, deadline time.Time) {
	keys := []string{spec.Keys[keyIdx]}
	cs := time.Duration(spec.CSMs * float64(time.Millisecond))
	// The first call is made even if the worker starts late, so every worker is measured.
	for first := true; ctx.Err() == nil && (first || time.Now().Before(deadline)); first = false {
		var jobStart time.Time
		var hold time.Duration
		call := time.Now()
		err := p.Execute(ctx, keys, func(jctx context.Context) error {
			jobStart = time.Now()
			defer func() { hold = time.Since(jobStart) }()
			return r.criticalSection(jctx, spec.CounterKey, cs, st, keyIdx)
		}, execOpts)
		end := time.Now()
		switch {
		case err == nil:
			if !end.After(deadline) {
				w.completed++
				w.holdSum += ms(hold)
			}
			w.wait = append(w.wait, ms(jobStart.Sub(call)))
			w.latency = append(w.latency, ms(end.Sub(call)))
			if spec.CounterKey != "" {
				w.starts = append(w.starts, unixMs(jobStart))
			}
		case errors.Is(err, provider.ErrTimedOut), errors.Is(err, errNotObtained):
			w.timeouts++
		default:
			w.errors++
			if w.firstErr == nil {
				w.firstErr = err
			}
			return
		}
	}
}

// criticalSection is the job: mark entry in-process and in Redis, hold for cs, mark exit.
func (r *goRunner) criticalSection(ctx context.Context, counterKey string, cs time.Duration, st *shared, keyIdx int) error {
	if st.inFlight[keyIdx].Add(1) > 1 {
		st.overlaps.Add(1)
	}
	defer st.inFlight[keyIdx].Add(-1)
	if counterKey != "" {
		v, err := r.counter.Incr(ctx, counterKey).Result()
		if err != nil {
			return fmt.Errorf("counter INCR: %w", err)
		}
		st.observeRedis(v)
		defer func() { _ = r.counter.Decr(context.WithoutCancel(ctx), counterKey).Err() }()
	}
	if cs > 0 {
		t := time.NewTimer(cs)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}

// waitUntil sleeps until the wall-clock time atUnixMs (0: no wait) or ctx ends, and returns how
// late it already was (0 when on time).
func waitUntil(ctx context.Context, atUnixMs float64) time.Duration {
	if atUnixMs == 0 {
		return 0
	}
	d := time.Until(time.UnixMicro(int64(atUnixMs * 1000)))
	if d <= 0 {
		return -d
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return 0
}

// unixMs is t as Unix milliseconds with microsecond precision.
func unixMs(t time.Time) float64 { return float64(t.UnixMicro()) / 1000 }

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
