package source

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/internal/budget"
	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
)

// ScanCount is the COUNT hint of every SCAN: the batch size of a refresh (operator.ScanCount).
const ScanCount = operator.ScanCount

// Options configure a Source.
type Options struct {
	// Client is the Redis client (standalone, Sentinel or Cluster). Required.
	Client redis.UniversalClient
	// Namespace is the key prefix of the locks. Default provider.DefaultNamespace.
	Namespace string
	// Budget is the cost per second the console's own reads may use: one per command, except
	// a SCAN, which counts as the ScanCount keys it examines. Default budget.Default; negative
	// means unlimited (benchmarks).
	Budget int
}

// Source reads the lock namespace from Redis, through an operator.Inspector's scanner and reads,
// paced to its budget. It is safe for concurrent use.
type Source struct {
	client  redis.UniversalClient
	ins     *operator.Inspector
	ns      string
	limiter *budget.Limiter
	scans   atomic.Uint64

	mu       sync.Mutex
	progress Progress
}

// New returns a Source for opts.
func New(opts Options) *Source {
	if opts.Namespace == "" {
		opts.Namespace = provider.DefaultNamespace
	}
	switch {
	case opts.Budget == 0:
		opts.Budget = budget.Default
	case opts.Budget < 0:
		opts.Budget = 0
	}
	return &Source{
		client:  opts.Client,
		ins:     operator.New(opts.Client, &operator.Options{Namespace: opts.Namespace}),
		ns:      opts.Namespace,
		limiter: budget.New(opts.Budget),
	}
}

// Namespace returns the key prefix read.
func (s *Source) Namespace() string { return s.ns }

// Budget returns the budget in units per second (0: unlimited): see Options.Budget.
func (s *Source) Budget() int { return s.limiter.Rate() }

// Client returns the Redis client.
func (s *Source) Client() redis.UniversalClient { return s.client }

// Sink receives what a Source reads. The Hub is one.
type Sink interface {
	// Observe takes locks read at `at`; scan is the full scan they belong to (0 for a
	// targeted read).
	Observe(locks []operator.Lock, at time.Time, scan uint64)
	// EndScan says full scan `scan`, started at `started`, is complete.
	EndScan(scan uint64, started time.Time)
	// Absent takes keys a targeted read found missing at `at`.
	Absent(keys []string, at time.Time)
}

// ScanStats describe one full refresh.
type ScanStats struct {
	Scan    uint64
	Started time.Time
	Took    time.Duration
	// Locks is the number of locks read (a key SCAN returned twice counts twice).
	Locks int
	// Commands is what the refresh sent: the SCANs plus operator.ReadsPerKey reads (the lock's
	// GET and PTTL, its holder record's PTTL, the lock's PTTL again and the record's GET) per key
	// returned.
	Commands int
	// Scans is the number of SCANs sent; each examines about ScanCount keys of the database.
	Scans int
	// Cost is what the refresh was charged against the budget: ScanCount per SCAN plus one per
	// read (GET, PTTL).
	Cost int
	// RoundTrips is the number of SCANs plus one: each SCAN after the first rides in the
	// pipeline that reads the previous batch.
	RoundTrips int
}

// Progress is how far the refresh under way is.
type Progress struct {
	// Running is true while a refresh walks the database.
	Running bool
	// Examined is about how many keys of the database its SCANs examined so far (ScanCount
	// per SCAN; compare with ServerInfo.Keys or the last refresh's ScanStats.Scans).
	Examined int
	// Locks is the number of locks it read so far.
	Locks int
}

// Progress returns how far the refresh under way is (Running false when none is).
func (s *Source) Progress() Progress {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.progress
}

func (s *Source) setProgress(f func(p *Progress)) {
	s.mu.Lock()
	f(&s.progress)
	s.mu.Unlock()
}

// Scan reads every lock of the namespace into sink, batch by batch, paced to the budget, with
// operator.Inspector.ScanWith (one round trip per batch plus one). A batch is delivered as soon
// as it is read, so a large namespace fills the screen progressively; EndScan follows only when
// the whole keyspace was walked without error. Progress says how far it is meanwhile.
func (s *Source) Scan(ctx context.Context, sink Sink) (ScanStats, error) {
	st := ScanStats{Scan: s.scans.Add(1), Started: time.Now()}
	s.setProgress(func(p *Progress) { *p = Progress{Running: true} })
	defer s.setProgress(func(p *Progress) { p.Running = false })
	var locks, cmds, trips, scans, cost atomic.Int64
	pace := func(ctx context.Context, n, reads int) error {
		c := n*ScanCount + reads
		cost.Add(int64(c))
		cmds.Add(int64(n + reads))
		scans.Add(int64(n))
		trips.Add(1)
		s.setProgress(func(p *Progress) { p.Examined += n * ScanCount })
		return s.limiter.Wait(ctx, c)
	}
	err := s.ins.ScanWith(ctx, operator.ScanOptions{Pace: pace}, func(found []operator.Lock) error {
		locks.Add(int64(len(found)))
		s.setProgress(func(p *Progress) { p.Locks += len(found) })
		sink.Observe(found, time.Now(), st.Scan)
		return nil
	})
	st.Took = time.Since(st.Started)
	st.Locks, st.Commands, st.RoundTrips = int(locks.Load()), int(cmds.Load()), int(trips.Load())
	st.Scans, st.Cost = int(scans.Load()), int(cost.Load())
	if err != nil {
		return st, err
	}
	sink.EndScan(st.Scan, st.Started)
	return st, nil
}

// Read reads keys (without namespace) in one pipeline, paced to the budget, and reports the
// locks found and the keys missing.
func (s *Source) Read(ctx context.Context, keys []string) (found []operator.Lock, absent []string, at time.Time, err error) {
	found, absent, at, err = s.ReadUnpaced(ctx, keys)
	if err == nil && len(keys) > 0 {
		err = s.limiter.Wait(ctx, operator.ReadsPerKey*len(keys))
	}
	return found, absent, at, err
}

// ReadUnpaced is Read outside the budget: for what the operator asked for by name (an exact
// lookup, the re-read after a release) and for sampling, whose cost is stated separately.
func (s *Source) ReadUnpaced(ctx context.Context, keys []string) (found []operator.Lock, absent []string, at time.Time, err error) {
	if len(keys) == 0 {
		return nil, nil, time.Now(), nil
	}
	found, absent, err = s.ins.Read(ctx, keys)
	return found, absent, time.Now(), err
}

// ReadInto is Read handing what it read to sink (Observe the locks found, Absent the keys
// missing); found is how many locks it found.
func (s *Source) ReadInto(ctx context.Context, sink Sink, keys []string) (found int, err error) {
	return deliver(sink)(s.Read(ctx, keys))
}

// ReadUnpacedInto is ReadInto outside the budget (see ReadUnpaced).
func (s *Source) ReadUnpacedInto(ctx context.Context, sink Sink, keys []string) (found int, err error) {
	return deliver(sink)(s.ReadUnpaced(ctx, keys))
}

// deliver hands the result of a read to sink.
func deliver(sink Sink) func(found []operator.Lock, absent []string, at time.Time, err error) (int, error) {
	return func(found []operator.Lock, absent []string, at time.Time, err error) (int, error) {
		if err != nil {
			return 0, err
		}
		if len(found) > 0 {
			sink.Observe(found, at, 0)
		}
		if len(absent) > 0 {
			sink.Absent(absent, at)
		}
		return len(found), nil
	}
}
