package demo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locktui/locktui/events"
	"github.com/locktui/locktui/internal/sleep"
	"github.com/locktui/locktui/provider"
	"github.com/redis/go-redis/v9"
)

// SimOptions tune a Simulator. A nil *SimOptions gives the defaults.
type SimOptions struct {
	// Seed makes the simulation's choices (keys, owners, durations, which lease gets lost)
	// repeatable; timing still varies with the scheduler. Default 0: a seed from the clock.
	Seed uint64
	// Pace scales every pause between operations: 2 is twice as slow, 0.5 twice as busy.
	// Default 1: about 10 lock calls and 20–30 lock events per second.
	Pace float64
	// Observer, when set, also receives every lock event of the simulated workers.
	Observer provider.Observer
	// Logger receives the simulated providers' warnings (lost leases, failed releases and
	// give-backs). Default: none are logged; lost leases are the point of the demo.
	Logger *slog.Logger
}

// Stats counts what the simulated workers did.
type Stats struct {
	Ops       uint64 // lock calls made (acquire, release, execute, release all)
	Conflicts uint64 // acquisitions refused because another owner held a key
	TimedOut  uint64 // Execute calls that did not get their keys in time
	Lost      uint64 // leases lost because their key was deleted under them
	Errors    uint64 // any other failure (Redis errors)
}

// StuckLock is a lock the simulation leaves behind on purpose: no TTL, owner gone.
type StuckLock struct {
	Key   string
	Owner string // "*" for the anonymous owner
}

// Simulator runs the workers of a small Medusa shop against one namespace: checkout jobs
// contending for hot carts, order workers holding named locks with TTLs, anonymous "*" locks,
// a product importer that releases everything it holds at once, abandoned locks with no TTL,
// and a payment job whose key is now and then deleted under it so its lease is lost. Every lock
// event is published with events.Publisher (source "demo", renewals included).
//
// It is meant for a throwaway server (StartServer): it leaves its locks behind when it stops.
type Simulator struct {
	client    redis.UniversalClient
	namespace string
	seed      uint64
	pace      float64
	observer  provider.Observer
	logger    *slog.Logger
	keys      keySet

	running   atomic.Bool
	ops       atomic.Uint64
	conflicts atomic.Uint64
	timedOut  atomic.Uint64
	lost      atomic.Uint64
	errs      atomic.Uint64
}

// NewSimulator prepares a simulation in namespace ("" means provider.DefaultNamespace). opts
// may be nil. The caller keeps ownership of client.
func NewSimulator(client redis.UniversalClient, namespace string, opts *SimOptions) *Simulator {
	var o SimOptions
	if opts != nil {
		o = *opts
	}
	if o.Seed == 0 {
		o.Seed = uint64(time.Now().UnixNano())
	}
	if o.Pace <= 0 {
		o.Pace = 1
	}
	if namespace == "" {
		namespace = provider.DefaultNamespace
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Simulator{
		client:    client,
		namespace: namespace,
		seed:      o.Seed,
		pace:      o.Pace,
		observer:  o.Observer,
		logger:    o.Logger,
		keys:      newKeySet(rand.New(rand.NewPCG(o.Seed, 0))),
	}
}

// Simulate runs a Simulator until ctx ends (see Simulator.Run).
func Simulate(ctx context.Context, client redis.UniversalClient, namespace string, opts *SimOptions) error {
	return NewSimulator(client, namespace, opts).Run(ctx)
}

// StuckLocks returns the abandoned locks Run plants first, before any worker starts.
func (s *Simulator) StuckLocks() []StuckLock {
	out := make([]StuckLock, initialStuck)
	for i, st := range s.keys.stuck[:initialStuck] {
		out[i] = StuckLock{Key: st.key, Owner: st.owner()}
		if out[i].Owner == "" {
			out[i].Owner = provider.DefaultOwner
		}
	}
	return out
}

// Stats returns the counts so far.
func (s *Simulator) Stats() Stats {
	return Stats{Ops: s.ops.Load(), Conflicts: s.conflicts.Load(), TimedOut: s.timedOut.Load(),
		Lost: s.lost.Load(), Errors: s.errs.Load()}
}

// Run plants the abandoned locks, then runs the workers until ctx ends, and returns nil once
// every worker has stopped, its locks have been given back (except the abandoned ones) and the
// queued events have been published. It fails at once when Redis does not answer; later Redis
// errors are counted (Stats.Errors) and the workers carry on. A Simulator runs once.
func (s *Simulator) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return errors.New("demo: the simulation is already running or has run")
	}
	if err := s.client.Ping(ctx).Err(); err != nil {
		if ctx.Err() != nil {
			return nil // stopped before it started
		}
		return fmt.Errorf("demo: simulation cannot reach Redis: %w", err)
	}
	pub := events.NewPublisher(s.client, s.namespace, events.SourceDemo,
		&events.PublisherOptions{IncludeRenewed: true})
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = pub.Close(closeCtx) // events are advisory; the demo has nowhere to report this
	}()
	rng := rand.New(rand.NewPCG(s.seed, 0))
	actors := []struct {
		act    func(context.Context, *worker)
		holder provider.Holder
	}{
		{s.checkout, process(rng, "medusa-server", "web-1", provider.ClientBridge)},
		{s.checkout, process(rng, "medusa-server", "web-1", provider.ClientBridge)},
		{s.checkout, process(rng, "medusa-server", "web-2", provider.ClientBridge)},
		{s.checkout, process(rng, "medusa-server", "web-2", provider.ClientBridge)},
		{s.fulfil, process(rng, "medusa-worker", "worker-1", provider.ClientBridge)},
		{s.fulfil, process(rng, "medusa-worker", "worker-1", provider.ClientBridge)},
		{s.fulfil, process(rng, "medusa-worker", "worker-2", provider.ClientBridge)},
		{s.importProducts, process(rng, "product-import", "batch-1", provider.ClientCLI)},
		{s.anonymous, process(rng, "legacy-sync", "batch-1", provider.ClientGo)},
		{s.capturePayments, process(rng, "payments", "pay-1", provider.ClientGo)},
		{s.replant, process(rng, "medusa-worker", "worker-"+shortID(rng), provider.ClientBridge)}, // crashed pods
	}
	// Each simulated process has a Provider of its own, as a real one would, so the holder
	// records (the console's HOLDER column, holder: filters, owners by process) tell them apart.
	providers := make([]*provider.Provider, len(actors))
	for i, a := range actors {
		providers[i] = provider.New(s.client, &provider.Options{
			Namespace: s.namespace,
			Observer:  provider.MultiObserver(pub, s.observer),
			Logger:    s.logger,
			Holder:    a.holder,
		})
		defer providers[i].Close()
	}
	for _, st := range s.keys.stuck[:initialStuck] {
		s.plant(ctx, providers[len(actors)-1], st) // by the crashed pods, as replant's later ones
	}
	var wg sync.WaitGroup
	for i, a := range actors {
		w := &worker{id: i + 1, p: providers[i], rng: rand.New(rand.NewPCG(s.seed, uint64(i+1))), pace: s.pace}
		wg.Go(func() { a.act(ctx, w) })
	}
	wg.Wait()
	return nil
}

// process is a simulated process's holder: program on host with a pid drawn from rng, as the
// console shows it (medusa-server/41873@web-1).
func process(rng *rand.Rand, program, host, client string) provider.Holder {
	return provider.Holder{Program: program, Host: host, PID: 1000 + rng.IntN(60000), Client: client}
}

// worker is the state of one simulated process.
type worker struct {
	id   int
	p    *provider.Provider
	rng  *rand.Rand
	pace float64
}

// between returns a random duration in [lo, hi).
func (w *worker) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(w.rng.Int64N(int64(hi-lo)))
}

// pause waits a random time in [lo, hi), scaled by the pace, and reports false when ctx ended.
// Only pauses are scaled: jobs and TTLs keep their length, so renewals and expiries look the
// same at any pace.
func (w *worker) pause(ctx context.Context, lo, hi time.Duration) bool {
	return sleep.For(ctx, time.Duration(float64(w.between(lo, hi))*w.pace))
}

// count records the outcome of one lock call. A lost lease counts even when the simulation
// was stopped meanwhile: the stop does not cause it. Any other error after the stop is the stop's.
func (s *Simulator) count(ctx context.Context, err error) {
	s.ops.Add(1)
	switch {
	case errors.Is(err, provider.ErrLockLost):
		s.lost.Add(1)
	case err == nil, ctx.Err() != nil:
	case errors.Is(err, provider.ErrNotAcquired):
		s.conflicts.Add(1)
	case errors.Is(err, provider.ErrTimedOut):
		s.timedOut.Add(1)
	default:
		s.errs.Add(1)
	}
}
