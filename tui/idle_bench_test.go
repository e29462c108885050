package tui

import (
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/tui/source"
)

// idleWindow is how long BenchmarkIdle watches the console after its first full table.
var idleWindow = flag.Duration("idle-window", time.Minute, "BenchmarkIdle: the idle window after the first full table")

// BenchmarkIdle runs the whole console headless (the refresh loop, the heartbeat, the keyspace
// feed; no lock events) against a redis-server of its own holding 100,000 locks, or 1,000,000
// other keys and 100 locks, with and without keyspace notifications, and reports what the
// server executed for it (INFO commandstats deltas, INFO left out):
//
//	full-table-s        from the start until the first full refresh ended
//	refresh-cmds        the commands of that refresh
//	idle-cmds/s         the commands a second over the window that follows, nothing changing
//	idle-cost/s         the same in the units of the budget: a SCAN counts as the 100 keys
//	                    it examines (what a database of other keys costs)
//	rescan-every-s      with notifications: the drift rescan's interval (source.DriftInterval)
//	amortised-cmds/s    with notifications: idle-cmds/s plus refresh-cmds spread over it
//
// Run it (not part of make test; about 8 minutes) with
//
//	go test -run '^$' -bench '^BenchmarkIdle$' -benchtime 1x -timeout 30m ./tui/
//
// and -idle-window to change the window (default 1m: longer than a poll of 100,000 locks).
func BenchmarkIdle(b *testing.B) {
	for _, bc := range []struct {
		name         string
		locks, other int
		notify       bool
	}{
		{"locks=100k/notify", 100_000, 0, true},
		{"locks=100k/poll", 100_000, 0, false},
		{"keys=1M/notify", 100, 1_000_000, true},
		{"keys=1M/poll", 100, 1_000_000, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			args := []string{"--enable-debug-command", "yes"}
			if bc.notify {
				args = append(args, notifyArgs...)
			}
			srv := redistest.StartWith(b, redistest.Config{Args: args})
			client := srv.Client(b)
			loadIdle(b, client, bc.locks, bc.other)
			for b.Loop() {
				c := startConsole(b, Config{Client: client, URL: srv.URL, NoEvents: true})
				c.awaitRefreshes(1, 10*time.Minute)
				startCmds, startCost := consoleCalls(b, client)
				before := c.refreshes.Load()
				time.Sleep(*idleWindow) // the measurement window
				endCmds, endCost := consoleCalls(b, client)
				idle := float64(endCmds-startCmds) / idleWindow.Seconds()
				first := c.first.Load()
				b.ReportMetric(time.Duration(c.firstAfter.Load()).Seconds(), "full-table-s")
				b.ReportMetric(float64(first.Commands), "refresh-cmds")
				b.ReportMetric(idle, "idle-cmds/s")
				b.ReportMetric(float64(endCost-startCost)/idleWindow.Seconds(), "idle-cost/s")
				b.ReportMetric(float64(c.refreshes.Load()-before), "refreshes-in-window")
				if bc.notify {
					every := source.DriftInterval(DefaultKeyspacePoll, *first)
					b.ReportMetric(every.Seconds(), "rescan-every-s")
					b.ReportMetric(idle+float64(first.Commands)/every.Seconds(), "amortised-cmds/s")
				}
				c.quit()
			}
		})
	}
}

// loadIdle writes locks locks with an hour's TTL (one in 50 without: the NO TTL suspects),
// so none expires during the run, and other keys outside the namespace (DEBUG POPULATE).
func loadIdle(b *testing.B, client *redis.Client, locks, other int) {
	b.Helper()
	ctx := b.Context()
	if other > 0 {
		if err := client.Do(ctx, "DEBUG", "POPULATE", other, "app:session").Err(); err != nil {
			b.Fatal(err)
		}
	}
	for start := 0; start < locks; start += 10_000 {
		pipe := client.Pipeline()
		for i := start; i < min(start+10_000, locks); i++ {
			ttl := time.Hour
			if i%50 == 0 {
				ttl = 0
			}
			pipe.Set(ctx, fmt.Sprintf("medusa_lock:cart:%06d", i), fmt.Sprintf("execute:owner-%d", i%997), ttl)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
