package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/redisconn"
)

// redisStats are the Redis server's counters a window's cost is read from: the calls of each
// command (INFO commandstats, which counts a command a script runs as a call of that command,
// besides the EVALSHA or EVAL that ran the script) and the server's CPU time (INFO cpu,
// used_cpu_sys + used_cpu_user, microseconds). On a cluster they are the masters' sums.
type redisStats struct {
	calls map[string]int64
	cpu   time.Duration
}

// parseRedisStats reads the cpu and commandstats sections of an INFO reply. A command's count is
// its calls plus its rejected_calls (refused before running: still sent to the server).
func parseRedisStats(info string) (redisStats, error) {
	s := redisStats{calls: map[string]int64{}}
	var sys, user bool
	for line := range strings.Lines(info) {
		name, value, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch {
		case name == "used_cpu_sys" || name == "used_cpu_user":
			secs, err := strconv.ParseFloat(value, 64)
			if err != nil {
				return redisStats{}, fmt.Errorf("bench: INFO cpu %s: %w", line, err)
			}
			s.cpu += time.Duration(secs * float64(time.Second)).Round(time.Microsecond)
			sys, user = sys || name == "used_cpu_sys", user || name == "used_cpu_user"
		case strings.HasPrefix(name, "cmdstat_"):
			n, err := commandCalls(value)
			if err != nil {
				return redisStats{}, fmt.Errorf("bench: INFO commandstats %s: %w", strings.TrimSpace(line), err)
			}
			s.calls[strings.TrimPrefix(name, "cmdstat_")] = n
		}
	}
	if !sys || !user {
		return redisStats{}, fmt.Errorf("bench: INFO has no used_cpu_sys and used_cpu_user")
	}
	return s, nil
}

// commandCalls adds calls and rejected_calls of a commandstats value,
// "calls=3,usec=9,usec_per_call=3.00,rejected_calls=1,failed_calls=0".
func commandCalls(value string) (int64, error) {
	var n int64
	found := false
	for field := range strings.SplitSeq(value, ",") {
		k, v, _ := strings.Cut(field, "=")
		if k != "calls" && k != "rejected_calls" {
			continue
		}
		c, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, err
		}
		n += c
		found = found || k == "calls"
	}
	if !found {
		return 0, fmt.Errorf("no calls= field")
	}
	return n, nil
}

// add is the sum of two servers' counters.
func (s redisStats) add(o redisStats) redisStats {
	out := redisStats{calls: maps.Clone(s.calls), cpu: s.cpu + o.cpu}
	if out.calls == nil {
		out.calls = map[string]int64{}
	}
	for name, n := range o.calls {
		out.calls[name] += n
	}
	return out
}

// since is what the server did from s0 to s: the commands with calls in between, and the CPU.
func (s redisStats) since(s0 redisStats) redisStats {
	out := redisStats{calls: map[string]int64{}, cpu: s.cpu - s0.cpu}
	for name, n := range s.calls {
		if d := n - s0.calls[name]; d > 0 {
			out.calls[name] = d
		}
	}
	return out
}

// benchCommands are the commands the bench itself sends while a window's counters run: the
// INFO that reads them (and that ioredis sends as its ready check on connecting), and the jobs'
// INCR and DECR of the counter (jobs of them at most; see lockCommands).
const (
	infoCommand = "info"
	incrCommand = "incr"
	decrCommand = "decr"
)

// lockCommands is the commands of calls that the locks made Redis run: every command but the
// bench's INFO, less one INCR and one DECR per job that ran the counter (jobs; 0 for jobs
// without one). No lock of the bench calls INCR or DECR; an INCR or DECR beyond jobs is
// counted as the lock's.
func lockCommands(calls map[string]int64, jobs int) int64 {
	var n int64
	for name, c := range calls {
		switch name {
		case infoCommand:
		case incrCommand, decrCommand:
			n += max(c-int64(jobs), 0)
		default:
			n += c
		}
	}
	return n
}

// redisProbe reads the Redis server of a run between and around its windows: its counters, and
// the keys it holds. On a cluster client it reads every master.
type redisProbe struct {
	c redis.UniversalClient
}

// openProbe opens the probe's own client on url (a cluster URL: a cluster client), so its reads
// never wait for a connection of a client under test.
func openProbe(url string) (*redisProbe, error) {
	c, err := redisconn.Open(url, redisconn.TLSFiles{})
	if err != nil {
		return nil, err
	}
	return &redisProbe{c: c}, nil
}

func (p *redisProbe) close() { _ = p.c.Close() }

// eachMaster runs fn on the server, or on every master of a cluster.
func (p *redisProbe) eachMaster(ctx context.Context, fn func(ctx context.Context, c redis.Cmdable) error) error {
	if cc, ok := p.c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return fn(ctx, c) })
	}
	return fn(ctx, p.c)
}

// stats reads the counters (summed over the masters of a cluster).
func (p *redisProbe) stats(ctx context.Context) (redisStats, error) {
	var (
		mu  sync.Mutex
		sum = redisStats{calls: map[string]int64{}}
	)
	err := p.eachMaster(ctx, func(ctx context.Context, c redis.Cmdable) error {
		info, err := c.Info(ctx, "cpu", "commandstats").Result()
		if err != nil {
			return err
		}
		s, err := parseRedisStats(info)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		sum = sum.add(s)
		return nil
	})
	return sum, err
}

// scanBatch is SCAN's COUNT hint.
const scanBatch = 1000

// keys lists every key of the server (every master's) but the bench's counters.
func (p *redisProbe) keys(ctx context.Context) (map[string]bool, error) {
	var mu sync.Mutex
	out := map[string]bool{}
	err := p.eachMaster(ctx, func(ctx context.Context, c redis.Cmdable) error {
		it := c.Scan(ctx, 0, "", scanBatch).Iterator()
		for it.Next(ctx) {
			if k := it.Val(); !strings.HasPrefix(k, counterPrefix) {
				mu.Lock()
				out[k] = true
				mu.Unlock()
			}
		}
		return it.Err()
	})
	return out, err
}

// keysLeft is what a run left in Redis: the keys that were not there before it (Count), how many
// of them have no TTL (they stay until deleted) and a few of their names, sorted.
type keysLeft struct {
	Count  int
	NoTTL  int
	Sample []string
}

// trackKeys lists the keys before a run and returns the function that, after it, reports what
// the run left (see left); ok is false when that was not measured: a nil probe (no error), or a
// failed read (the error).
func (p *redisProbe) trackKeys(ctx context.Context) func() (left keysLeft, ok bool, err error) {
	if p == nil {
		return func() (keysLeft, bool, error) { return keysLeft{}, false, nil }
	}
	before, err := p.keys(ctx)
	return func() (keysLeft, bool, error) {
		if err != nil {
			return keysLeft{}, false, err
		}
		left, err := p.left(ctx, before)
		return left, err == nil, err
	}
}

// keysLeftSample is how many names of left keys the report shows.
const keysLeftSample = 5

// left compares the keys now with before (from keys, before the run) and reads the TTL of each
// new one; a key that expired meanwhile is not counted.
func (p *redisProbe) left(ctx context.Context, before map[string]bool) (keysLeft, error) {
	now, err := p.keys(ctx)
	if err != nil {
		return keysLeft{}, err
	}
	var added []string
	for k := range now {
		if !before[k] {
			added = append(added, k)
		}
	}
	slices.Sort(added)
	ttls := make([]*redis.DurationCmd, len(added))
	if len(added) > 0 {
		if _, err := p.c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			for i, k := range added {
				ttls[i] = pipe.PTTL(ctx, k)
			}
			return nil
		}); err != nil {
			return keysLeft{}, fmt.Errorf("bench: PTTL of the keys left: %w", err)
		}
	}
	return countLeft(added, ttls), nil
}

// countLeft counts keys by their PTTL replies: -2 (gone) is not counted, -1 (no TTL) is counted
// in NoTTL too.
func countLeft(keys []string, ttls []*redis.DurationCmd) keysLeft {
	var out keysLeft
	for i, k := range keys {
		switch ttls[i].Val() {
		case -2:
			continue
		case -1:
			out.NoTTL++
		}
		out.Count++
		if len(out.Sample) < keysLeftSample {
			out.Sample = append(out.Sample, k)
		}
	}
	return out
}
