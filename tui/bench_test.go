package tui

import (
	"context"
	"fmt"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/internal/budget"
	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
	"github.com/locktui/locktui/tui/source"
	"github.com/locktui/locktui/tui/store"
)

const benchLocks = 100000

// storeSink applies a refresh to a store, as the hub does.
type storeSink struct{ s *store.Store }

func (k storeSink) Observe(l []operator.Lock, at time.Time, scan uint64) { k.s.Observe(l, at, scan) }
func (k storeSink) EndScan(scan uint64, started time.Time)               { k.s.EndScan(scan, started, time.Now()) }
func (k storeSink) Absent(keys []string, at time.Time)                   { k.s.Absent(keys, at) }

// BenchmarkRefresh100k measures one full refresh of 100,000 locks against a real
// redis-server: the time (unpaced, so the raw cost), the commands and the round trips, and how
// long the refresh takes when paced to the default budget (SCANs counted as the keys they examine).
func BenchmarkRefresh100k(b *testing.B) {
	srv := redistest.Start(b)
	client := srv.Client(b)
	ctx := context.Background()
	for start := 0; start < benchLocks; start += 10000 {
		pipe := client.Pipeline()
		for i := start; i < start+10000; i++ {
			ttl := time.Duration(30+i%600) * time.Second
			if i%50 == 0 {
				ttl = 0
			}
			pipe.Set(ctx, fmt.Sprintf("medusa_lock:cart:%06d", i), fmt.Sprintf("execute:owner-%d", i%997), ttl)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	hook := &redistest.Recorder{CountOnly: true}
	client.AddHook(hook)
	src := source.New(source.Options{Client: client, Budget: -1})
	s := store.New()
	b.ResetTimer()
	var cmds, trips, cost int
	for i := 0; i < b.N; i++ {
		st, err := src.Scan(ctx, storeSink{s})
		if err != nil {
			b.Fatal(err)
		}
		if st.Locks < benchLocks {
			b.Fatalf("refresh read %d locks, want %d", st.Locks, benchLocks)
		}
		c, t := hook.Reset()
		cmds, trips, cost = cmds+c, trips+t, cost+st.Cost
	}
	b.StopTimer()
	perRefresh := float64(cmds) / float64(b.N)
	b.ReportMetric(perRefresh, "cmds/refresh")
	b.ReportMetric(float64(trips)/float64(b.N), "roundtrips/refresh")
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/refresh")
	b.ReportMetric(float64(cost)/float64(b.N)/budget.Default, "s/refresh@budget")
}

// benchStore is a store of 100,000 locks across 1,000 owners, some without TTL, some contended;
// three in four have a holder record, from 50 processes.
func benchStore(now time.Time) *store.Store {
	s := store.New()
	locks := make([]operator.Lock, benchLocks)
	for i := range locks {
		ttl := time.Duration(1+i%600) * time.Second
		if i%50 == 0 {
			ttl = provider.NoExpiry
		}
		locks[i] = operator.Lock{Key: fmt.Sprintf("cart:%06d", i), Owner: fmt.Sprintf("execute:owner-%d", i%1000), TTL: ttl}
		if i%4 != 0 {
			locks[i].Record = &operator.Record{AcquiredAt: now.Add(-time.Duration(i) * time.Millisecond), FencingToken: int64(i),
				Holder: provider.Holder{Host: fmt.Sprintf("web-%d", i%50), PID: 1000 + i%50, Program: "medusa-worker", Client: provider.ClientBridge}}
		}
	}
	s.Observe(locks, now, 1)
	for i := 0; i < 500; i++ {
		s.Event(store.Event{Kind: provider.EventWaiting, Key: fmt.Sprintf("cart:%06d", i*7), Owner: "w", Time: now})
	}
	return s
}

// BenchmarkView100k measures what the console does per View off the UI goroutine (filter and
// sort of 100,000 locks in the hub) and on it (rendering the rows on screen).
func BenchmarkView100k(b *testing.B) {
	now := time.Now()
	s := benchStore(now)
	queries := []struct {
		name string
		q    store.Query
	}{
		{"attention", store.Query{}},
		{"substring+ttl", store.Query{Filter: "cart:01", LockSort: store.Sort{Column: store.LockByTTL}}},
		{"glob+key", store.Query{Filter: "cart:0*5", LockSort: store.Sort{Column: store.LockByKey, Reverse: true}}},
		{"owner+held", store.Query{Filter: "owner:execute:owner-1*", LockSort: store.Sort{Column: store.LockByHeld}}},
		{"by-process", store.Query{Grouping: store.ByProcess}},
		{"holder", store.Query{LockSort: store.Sort{Column: store.LockByHolder}}},
	}
	for _, qc := range queries {
		b.Run(qc.name, func(b *testing.B) {
			rt := newRuntime(context.Background())
			defer rt.shutdown()
			c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
			defer c.Close()
			m := newModel(Config{Client: c, NoColor: true}.withDefaults(), rt)
			m.Update(tea.WindowSizeMsg{Width: 160, Height: 50})
			var build, render time.Duration
			rows := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				v := s.Build(qc.q, now)
				t1 := time.Now()
				m.Update(viewMsg{view: v})
				_ = m.View()
				render += time.Since(t1)
				build += t1.Sub(t0)
				rows = len(v.Locks)
			}
			b.ReportMetric(float64(rows), "rows")
			b.ReportMetric(float64(build.Microseconds())/1000/float64(b.N), "build-ms/op")
			b.ReportMetric(float64(render.Microseconds())/1000/float64(b.N), "render-ms/op")
		})
	}
}
