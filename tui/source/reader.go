package source

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/provider"
)

// ScanCount is the COUNT hint of every SCAN: the batch size of a refresh.
const ScanCount = 100

// ScanCost is what one SCAN is charged against the budget: the ScanCount keys of the whole
// database it examines (MATCH filters after the walk), not one command. A refresh of a database
// that holds more than locks therefore slows down with the size of the database instead of
// loading Redis with SCANs.
const ScanCost = ScanCount

// Options configure a Source.
type Options struct {
	// Client is the Redis client (standalone, Sentinel or Cluster). Required.
	Client redis.UniversalClient
	// Namespace is the key prefix of the locks. Default provider.DefaultNamespace.
	Namespace string
	// Budget is the cost per second the console's own reads may use: one per command, except
	// a SCAN, which counts as the ScanCost keys it examines. Default DefaultBudget; negative
	// means unlimited (benchmarks).
	Budget int
}

// Source reads the lock namespace from Redis. It is safe for concurrent use.
type Source struct {
	client  redis.UniversalClient
	ns      string
	limiter *Limiter
	scans   atomic.Uint64
}

// New returns a Source for opts.
func New(opts Options) *Source {
	if opts.Namespace == "" {
		opts.Namespace = provider.DefaultNamespace
	}
	switch {
	case opts.Budget == 0:
		opts.Budget = DefaultBudget
	case opts.Budget < 0:
		opts.Budget = 0
	}
	return &Source{client: opts.Client, ns: opts.Namespace, limiter: NewLimiter(opts.Budget)}
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
	Observe(locks []provider.Lock, at time.Time, scan uint64)
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
	// Commands is what the refresh sent: the SCANs plus a GET and a PTTL per key returned.
	Commands int
	// Scans is the number of SCANs sent; each examines about ScanCount keys of the database.
	Scans int
	// Cost is what the refresh was charged against the budget: ScanCost per SCAN plus one
	// per GET and PTTL.
	Cost int
	// RoundTrips is the number of SCANs plus one: each SCAN after the first rides in the
	// pipeline that reads the previous batch.
	RoundTrips int
}

// Scan reads every lock of the namespace into sink, batch by batch, paced to the budget. The
// SCAN for the next batch rides in the pipeline that reads the current one, so a refresh takes
// one round trip per batch plus one. A batch is delivered as soon as it is read, so a large
// namespace fills the screen progressively; EndScan follows only when the whole keyspace was
// walked without error.
func (s *Source) Scan(ctx context.Context, sink Sink) (ScanStats, error) {
	st := ScanStats{Scan: s.scans.Add(1), Started: time.Now()}
	var locks, cmds, trips, scans, cost atomic.Int64
	// charge takes the cost of what is about to be sent from the budget, waiting as needed.
	charge := func(ctx context.Context, n int) error {
		cost.Add(int64(n))
		return s.limiter.Wait(ctx, n)
	}
	match := provider.LiteralPattern(s.ns) + "*"
	scanNode := func(ctx context.Context, node redis.Cmdable) error {
		if err := charge(ctx, ScanCost); err != nil {
			return err
		}
		redisKeys, cursor, err := node.Scan(ctx, 0, match, ScanCount).Result()
		if err != nil {
			return fmt.Errorf("scan %q: %w", match, err)
		}
		cmds.Add(1)
		trips.Add(1)
		scans.Add(1)
		for {
			if len(redisKeys) == 0 && cursor == 0 {
				return nil
			}
			batch := 2 * len(redisKeys) // a GET and a PTTL per key
			if cursor != 0 {
				batch += ScanCost // and the SCAN for the next batch
			}
			if err := charge(ctx, batch); err != nil {
				return err
			}
			pipe := node.Pipeline()
			parse := s.queueReads(ctx, pipe, trimKeys(redisKeys, s.ns))
			var next *redis.ScanCmd
			if cursor != 0 {
				next = pipe.Scan(ctx, cursor, match, ScanCount)
				scans.Add(1)
			}
			n := pipe.Len()
			_, _ = pipe.Exec(ctx)
			cmds.Add(int64(n))
			trips.Add(1)
			found, _, err := parse()
			if err != nil {
				return err
			}
			locks.Add(int64(len(found)))
			if len(found) > 0 {
				sink.Observe(found, time.Now(), st.Scan)
			}
			if next == nil {
				return nil
			}
			if redisKeys, cursor, err = next.Result(); err != nil {
				return fmt.Errorf("scan %q: %w", match, err)
			}
		}
	}
	var err error
	if cluster, ok := s.client.(*redis.ClusterClient); ok {
		err = cluster.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			return scanNode(ctx, node)
		})
	} else {
		err = scanNode(ctx, s.client)
	}
	st.Took = time.Since(st.Started)
	st.Locks, st.Commands, st.RoundTrips = int(locks.Load()), int(cmds.Load()), int(trips.Load())
	st.Scans, st.Cost = int(scans.Load()), int(cost.Load())
	if err != nil {
		return st, err
	}
	sink.EndScan(st.Scan, st.Started)
	return st, nil
}

func trimKeys(redisKeys []string, ns string) []string {
	keys := make([]string, len(redisKeys))
	for i, rk := range redisKeys {
		keys[i] = strings.TrimPrefix(rk, ns)
	}
	return keys
}

// Read reads keys (without namespace) in one pipeline, paced to the budget, and reports the
// locks found and the keys missing.
func (s *Source) Read(ctx context.Context, keys []string) (found []provider.Lock, absent []string, at time.Time, err error) {
	if len(keys) == 0 {
		return nil, nil, time.Now(), nil
	}
	found, absent, at, err = s.read(ctx, s.client, keys)
	if err == nil {
		err = s.limiter.Wait(ctx, 2*len(keys))
	}
	return found, absent, at, err
}

// ReadUnpaced is Read outside the budget, for sampling, whose cost is stated separately.
func (s *Source) ReadUnpaced(ctx context.Context, keys []string) (found []provider.Lock, absent []string, at time.Time, err error) {
	if len(keys) == 0 {
		return nil, nil, time.Now(), nil
	}
	return s.read(ctx, s.client, keys)
}

// read reads owner and TTL of keys with one pipeline of GET and PTTL.
func (s *Source) read(ctx context.Context, c redis.Cmdable, keys []string) (found []provider.Lock, absent []string, at time.Time, err error) {
	pipe := c.Pipeline()
	parse := s.queueReads(ctx, pipe, keys)
	_, _ = pipe.Exec(ctx)
	at = time.Now()
	found, absent, err = parse()
	return found, absent, at, err
}

// queueReads queues a GET and a PTTL per key on pipe and returns the function that parses
// them after Exec, as provider.Scan does: a key of another type is Foreign, a key that
// vanished between the reads is absent.
func (s *Source) queueReads(ctx context.Context, pipe redis.Pipeliner, keys []string) func() ([]provider.Lock, []string, error) {
	gets := make([]*redis.StringCmd, len(keys))
	ttls := make([]*redis.DurationCmd, len(keys))
	for i, key := range keys {
		gets[i] = pipe.Get(ctx, s.ns+key)
		ttls[i] = pipe.PTTL(ctx, s.ns+key)
	}
	return func() (found []provider.Lock, absent []string, _ error) {
		found = make([]provider.Lock, 0, len(keys))
		for i, key := range keys {
			owner, err := gets[i].Result()
			l := provider.Lock{Key: key, RedisKey: s.ns + key, Owner: owner}
			switch {
			case errors.Is(err, redis.Nil):
				absent = append(absent, key)
				continue
			case err != nil && redis.HasErrorPrefix(err, "WRONGTYPE"):
				l.Owner, l.Foreign = "", true
			case err != nil:
				return nil, nil, fmt.Errorf("read %q: %w", key, err)
			}
			ttl, err := ttls[i].Result()
			if err != nil {
				return nil, nil, fmt.Errorf("read the TTL of %q: %w", key, err)
			}
			switch {
			case ttl == -2*time.Nanosecond || ttl == -2*time.Millisecond:
				absent = append(absent, key) // expired between GET and PTTL
				continue
			case ttl < 0:
				l.TTL = provider.NoExpiry
			default:
				l.TTL = ttl
			}
			found = append(found, l)
		}
		return found, absent, nil
	}
}
