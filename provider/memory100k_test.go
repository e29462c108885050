package provider_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/internal/testsupport/locktest"
	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/provider"
)

// serverBudget is the most memory, in bytes of the server's used_memory, that our side key
// (the holder record) may add per lock on a server holding 100,000 locks: what a lock of
// ours costs beyond a stock-shaped one, the server's hash tables and expiry entries included.
// docs/fencing.md states the measured figure.
const serverBudget = 450

// BenchmarkHolderRecordMemory100k takes 100,000 locks of ours on a private redis-server and
// compares the server's used_memory with that of 100,000 stock-shaped locks (the same keys and
// owners, written as stock writes them: SET … NX EX): it reports the bytes a lock of each kind
// takes and fails when our side keys take more than serverBudget a lock. Taking 100,000 locks
// through acquire.lua takes 8–20 s on a busy 2-core machine, too long for `go test`, so it is a
// benchmark, run once:
//
//	go test -run '^$' -bench HolderRecordMemory100k -benchtime 1x ./provider/
//
// TestHolderRecordMemory, in every `go test`, checks the per-key figure (MEMORY USAGE).
func BenchmarkHolderRecordMemory100k(b *testing.B) {
	const n, batch = 100_000, 2_000
	srv := redistest.StartWith(b, redistest.Config{Args: []string{"--enable-debug-command", "local"}}) // DEBUG HTSTATS
	rdb := srv.Client(b)
	p := locktest.NewProvider(b, srv.Client(b), &provider.Options{
		Holder: provider.Holder{Host: "ip-10-0-12-34.ec2.internal", Program: "medusa-worker"}})
	c := b.Context()
	key := func(i int) string { return fmt.Sprintf("cart:cart_01J%023d", i) }
	owner := func(b int) string {
		return provider.ExecuteOwnerPrefix + fmt.Sprintf("%08d-0000-4000-8000-000000000000", b)
	}
	const expire = time.Hour // nothing expires while it runs
	check := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	// The scripts loaded and the provider's connections open before the first reading.
	check(p.Acquire(c, []string{"warm-up"}, provider.AcquireOptions{}))
	_, err := p.Release(c, []string{"warm-up"}, "")
	check(err)

	for range b.N {
		check(rdb.FlushAll(c).Err())
		stock := grow(c, b, rdb, func() {
			for first := 0; first < n; first += batch {
				_, err := rdb.Pipelined(c, func(pipe redis.Pipeliner) error {
					for i := first; i < first+batch; i++ {
						pipe.SetNX(c, provider.DefaultNamespace+key(i), owner(first), expire)
					}
					return nil
				})
				check(err)
			}
		})
		check(rdb.FlushAll(c).Err())
		ours := grow(c, b, rdb, func() {
			keys := make([]string, batch)
			for first := 0; first < n; first += batch {
				for i := range keys {
					keys[i] = key(first + i)
				}
				// One call takes its keys in one pipeline of acquire.lua runs.
				check(p.Acquire(c, keys, provider.AcquireOptions{Owner: owner(first), Expire: expire}))
			}
		})
		if got := rdb.DBSize(c).Val(); got != 2*n {
			b.Fatalf("%d keys, want %d: every lock with its holder record", got, 2*n)
		}
		perStock, perSide := stock/n, (ours-stock)/n
		b.ReportMetric(float64(perStock), "stock-bytes/lock")
		b.ReportMetric(float64(perSide), "side-bytes/lock")
		b.Logf("100,000 locks: stock-shaped %.1f MB (%d bytes a lock); ours %.1f MB, of which %.1f MB (%d bytes a lock) for holder records",
			float64(stock)/1e6, perStock, float64(ours)/1e6, float64(ours-stock)/1e6, perSide)
		if perSide > serverBudget {
			b.Fatalf("holder records take %d bytes a lock, more than the %d stated", perSide, serverBudget)
		}
	}
}

// grow returns how much the server's used_memory grew while fill ran, each reading taken once the
// server finished resizing its hash tables (it rehashes in the background, holding the old table
// and the new one until it is done).
func grow(ctx context.Context, b *testing.B, rdb *redis.Client, fill func()) int64 {
	b.Helper()
	before := settledMemory(ctx, b, rdb)
	fill()
	return settledMemory(ctx, b, rdb) - before
}

// settledMemory reads used_memory once no hash table of db 0 is being rehashed (DEBUG HTSTATS
// names no "rehashing target"), polling every 50 ms.
func settledMemory(ctx context.Context, b *testing.B, rdb *redis.Client) int64 {
	b.Helper()
	for {
		stats, err := rdb.Do(ctx, "DEBUG", "HTSTATS", "0").Text()
		if err != nil {
			b.Fatal(err)
		}
		if !strings.Contains(stats, "rehashing") {
			return usedMemory(ctx, b, rdb)
		}
		select {
		case <-ctx.Done():
			b.Fatal(ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// usedMemory reads used_memory from INFO memory.
func usedMemory(ctx context.Context, b *testing.B, rdb *redis.Client) int64 {
	b.Helper()
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatalf("no used_memory in INFO memory: %q", info)
	return 0
}
