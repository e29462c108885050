package provider_test

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/internal/testsupport/locktest"
	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/provider"
	"github.com/locktui/locktui/redisconn"
)

// BenchmarkExecute measures the provider's hot path: Execute of an empty job on a free key, by
// 1 and by 50 goroutines, each on a key of its own (the bench's uncontended scenarios), against a
// private redis-server, on a client opened as services open it (redisconn.Open). `go test` runs
// no benchmark; run it, and profile it, with
//
//	go test -run '^$' -bench BenchmarkExecute -benchmem ./provider/
//	go test -run '^$' -bench 'BenchmarkExecute/workers=50' -cpuprofile cpu.out ./provider/
//
// Besides time and allocations it reports the commands Redis ran per execute (cmds/op, from
// INFO commandstats: the commands clients sent), the commands the server ran, the scripts' own
// included (redis-cmds/op), the server's CPU time (redis-µs/op) and the round trips (rtt/op:
// pipelines and single commands the client sent). Stock Medusa's execute of one key costs 2 of each: one
// EVALSHA that takes the key and one that releases it.
//
// With LOCKTUI_BENCH_REDIS_URL set, it runs against that server instead (a scratch one: it
// writes keys), e.g. a redis-server under valgrind's callgrind, whose instruction count does not
// depend on the machine's load (README, "The Go provider's hot path").
func BenchmarkExecute(b *testing.B) {
	for _, workers := range []int{1, 50} {
		b.Run("workers="+strconv.Itoa(workers), func(b *testing.B) {
			url, stats := benchServer(b)
			client, err := redisconn.Open(url, redisconn.TLSFiles{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = client.Close() })
			trips := &redistest.Recorder{CountOnly: true}
			client.AddHook(trips)
			p := locktest.NewProvider(b, client, &provider.Options{Namespace: "bench:", Logger: slog.New(slog.DiscardHandler)})
			job := func(context.Context) error { return nil }
			ctx := b.Context()
			var warm sync.WaitGroup
			for i := range workers { // fills the connection pool, as a running service has it
				warm.Go(func() {
					if err := p.Execute(ctx, []string{"warm-up:" + strconv.Itoa(i)}, job, provider.ExecuteOptions{}); err != nil {
						b.Error(err)
					}
				})
			}
			warm.Wait()
			sentBefore, allBefore := commandCalls(b, stats)
			cpuBefore := serverCPU(b, stats)
			trips.Reset()
			var left atomic.Int64
			left.Store(int64(b.N))
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					key := "key:" + strconv.Itoa(w)
					for left.Add(-1) >= 0 {
						if err := p.Execute(ctx, []string{key}, job, provider.ExecuteOptions{}); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			// The epoch watcher's INFO probes (one per 500 ms while leases are held) are left in:
			// they are part of what a service pays.
			sent, all := commandCalls(b, stats)
			n := float64(b.N)
			b.ReportMetric(float64(sent-sentBefore-1)/n, "cmds/op") // less the INFO before
			b.ReportMetric(float64(all-allBefore-1)/n, "redis-cmds/op")
			b.ReportMetric((serverCPU(b, stats)-cpuBefore).Seconds()*1e6/n, "redis-µs/op")
			b.ReportMetric(float64(trips.Trips())/float64(b.N), "rtt/op")
		})
	}
}

// benchServer is the server BenchmarkExecute runs against, and a client for its statistics: the
// one LOCKTUI_BENCH_REDIS_URL names, else a private redis-server.
func benchServer(b *testing.B) (url string, stats *redis.Client) {
	if url := os.Getenv("LOCKTUI_BENCH_REDIS_URL"); url != "" {
		opts, err := redis.ParseURL(url)
		if err != nil {
			b.Fatalf("LOCKTUI_BENCH_REDIS_URL: %v", err)
		}
		stats := redis.NewClient(opts)
		b.Cleanup(func() { _ = stats.Close() })
		return url, stats
	}
	srv := redistest.Start(b)
	return srv.URL, srv.Client(b)
}

// commandCalls returns, from INFO commandstats, the commands clients sent (EVAL, EVALSHA and
// the rest) and every command the server ran, those the scripts called included.
func commandCalls(b testing.TB, c *redis.Client) (sent, all int64) {
	b.Helper()
	for name, calls := range commandStats(b, c) {
		all += calls
		if !scriptCalled[name] {
			sent += calls
		}
	}
	return sent, all
}

// commandStats returns INFO commandstats as calls by command name ("evalsha", "info", ...).
func commandStats(b testing.TB, c *redis.Client) map[string]int64 {
	b.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]int64{}
	for line := range strings.Lines(info) {
		name, rest, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":calls=")
		if !ok {
			continue
		}
		calls, err := strconv.ParseInt(rest[:strings.IndexByte(rest+",", ',')], 10, 64)
		if err != nil {
			b.Fatalf("INFO commandstats: %q: %v", line, err)
		}
		out[name] = calls
	}
	return out
}

// serverCPU is the CPU time the server has used (INFO cpu: user and system).
func serverCPU(b *testing.B, c *redis.Client) time.Duration {
	b.Helper()
	info, err := c.Info(b.Context(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for line := range strings.Lines(info) {
		name, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		if name == "used_cpu_sys" || name == "used_cpu_user" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatalf("INFO cpu: %q: %v", line, err)
			}
			total += f
		}
	}
	return time.Duration(total * float64(time.Second))
}

// scriptCalled are the commands that only the scripts call: the rest come from clients.
var scriptCalled = map[string]bool{
	"get": true, "set": true, "del": true, "exists": true, "hset": true, "hget": true, "hdel": true,
	"hsetnx": true, "hgetall": true, "hmget": true, "pexpireat": true, "pexpire": true, "pexpiretime": true, "persist": true,
	"pttl": true, "time": true, "mget": true, "unlink": true, "type": true, "expire": true, "publish": true, "lindex": true, "lpop": true, "rpush": true, "lrem": true,
	"zadd": true, "zrem": true, "zscore": true, "zrange": true,
}
