package source_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
	"github.com/locktui/locktui/tui/source"
	"github.com/locktui/locktui/tui/store"
)

// sink records what a Source delivers.
type sink struct {
	mu     sync.Mutex
	locks  map[string]operator.Lock
	absent []string
	ended  []uint64
}

func (s *sink) Observe(locks []operator.Lock, _ time.Time, _ uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.locks == nil {
		s.locks = map[string]operator.Lock{}
	}
	for _, l := range locks {
		s.locks[l.Key] = l
	}
}
func (s *sink) EndScan(scan uint64, _ time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = append(s.ended, scan)
}
func (s *sink) Absent(keys []string, _ time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.absent = append(s.absent, keys...)
}

func TestScanReadsEveryLockWithinTheStatedCost(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	ctx := t.Context()
	const ns = "ns[1]*:" // glob characters must match literally
	const n = 250
	pipe := client.Pipeline()
	for i := 0; i < n; i++ {
		pipe.Set(ctx, fmt.Sprintf("%skey:%03d", ns, i), fmt.Sprintf("owner-%d", i%7), time.Minute)
	}
	pipe.Set(ctx, ns+"forever", "*", 0)
	pipe.HSet(ctx, ns+"hash", "f", "v")
	pipe.Set(ctx, "ns11:other", "x", 0) // would match the unescaped glob
	pipe.Set(ctx, "unrelated", "x", 0)
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)

	count := &redistest.Recorder{}
	client.AddHook(count)
	src := source.New(source.Options{Client: client, Namespace: ns, Budget: -1})
	var got sink
	st, err := src.Scan(ctx, &got)
	require.NoError(t, err)

	require.Len(t, got.locks, n+2)
	assert.Equal(t, "owner-3", got.locks["key:003"].Owner)
	assert.InDelta(t, time.Minute, got.locks["key:003"].TTL, float64(2*time.Second))
	assert.Equal(t, provider.NoExpiry, got.locks["forever"].TTL)
	assert.True(t, got.locks["hash"].Foreign)
	assert.Equal(t, []uint64{st.Scan}, got.ended)

	scans := count.Count("scan")
	assert.Equal(t, 2*(n+2), count.Count("get"), "the locks and their holder records")
	assert.Equal(t, 3*(n+2), count.Count("pttl"), "the locks (twice, around the record's) and their holder records")
	reads := count.Count("get") + count.Count("pttl")
	assert.Equal(t, operator.ReadsPerKey*(n+2), reads)
	assert.Equal(t, scans+reads, st.Commands, "the stats count what was sent")
	assert.Equal(t, scans, st.Scans)
	assert.Equal(t, scans*operator.ScanCount+reads, st.Cost, "a SCAN costs the keys it examines, a read one")
	assert.Equal(t, scans+1, count.Trips(), "each SCAN after the first rides with the reads")
	assert.Equal(t, count.Trips(), st.RoundTrips)
	assert.Equal(t, n+2, st.Locks)
}

func TestReadReportsAbsentKeys(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	ctx := t.Context()
	require.NoError(t, client.Set(ctx, "medusa_lock:a", "o", time.Minute).Err())
	src := source.New(source.Options{Client: client})
	found, absent, _, err := src.Read(ctx, []string{"a", "b"})
	require.NoError(t, err)
	require.Len(t, found, 1)
	assert.Equal(t, "o", found[0].Owner)
	assert.Equal(t, []string{"b"}, absent)
}

func TestServerInfoAndKeyspace(t *testing.T) {
	srv := redistest.StartWith(t, redistest.Config{Args: []string{"--notify-keyspace-events", "Kgx$"}})
	client := srv.Client(t)
	ctx := t.Context()
	src := source.New(source.Options{Client: client})
	info, err := src.ServerInfo(ctx)
	require.NoError(t, err)
	assert.Regexp(t, `^\d+\.\d+`, info.Version)
	assert.True(t, info.Keyspace(), "flags %q", info.KeyspaceEvents)
	lat, err := src.Ping(ctx)
	require.NoError(t, err)
	assert.Positive(t, lat)

	take := subscribeKeyspace(ctx, t, src, info.DB)
	require.NoError(t, client.Set(ctx, "medusa_lock:cart:1", "o", time.Minute).Err())
	require.NoError(t, client.Set(ctx, "other:cart:2", "o", time.Minute).Err())
	keys, lost := take()
	assert.False(t, lost)
	assert.Equal(t, []string{"cart:1"}, keys, "only the namespace, without its prefix")
}

func TestKeyspaceOffWithoutFlags(t *testing.T) {
	for _, flags := range []string{"", "Ex", "KA"} {
		info := source.ServerInfo{KeyspaceEvents: flags}
		if got, want := info.Keyspace(), flags == "KA"; got != want {
			t.Errorf("Keyspace() with %q = %v, want %v", flags, got, want)
		}
	}
	assert.False(t, source.ServerInfo{KeyspaceEvents: "KA", Cluster: true}.Keyspace())
}

func TestScanFailsWhenRedisIsGone(t *testing.T) {
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialTimeout: time.Second})
	defer client.Close()
	srv.Stop()
	src := source.New(source.Options{Client: client})
	var got sink
	_, err := src.Scan(t.Context(), &got)
	require.Error(t, err)
	assert.Empty(t, got.ended, "no EndScan after a failed walk: nothing is marked GONE")
	_, err = src.Ping(t.Context())
	require.Error(t, err)
}

func TestHubBuildsViewsForTheQuery(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	h := source.NewHub()
	var sched source.Scheduler
	sched.Add(h.Builds())
	done := make(chan struct{})
	go func() { sched.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	h.Observe([]operator.Lock{
		{Key: "cart:1", Owner: "a", TTL: time.Minute},
		{Key: "order:1", Owner: "b", TTL: time.Minute},
	}, time.Now(), 1)
	h.EndScan(1, time.Now().Add(-time.Second))
	h.Event(store.Event{Kind: provider.EventWaiting, Key: "cart:1", Owner: "w", Time: time.Now()})
	h.SetQuery(store.Query{Filter: "cart"})
	require.Eventually(t, func() bool {
		v, ok := h.Next(ctx)
		return ok && v.Query.Filter == "cart" && len(v.Locks) == 1 && v.Locks[0].Key == "cart:1" &&
			v.Total == 2 && v.Contention["cart:1"] != nil
	}, 5*time.Second, time.Millisecond)
}

func TestSamplerCountsHandoffs(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	ctx := t.Context()
	require.NoError(t, client.Set(ctx, "medusa_lock:hot", "a", time.Minute).Err())
	src := source.New(source.Options{Client: client})
	sm := src.NewSampler([]string{"hot", "missing"})
	assert.Equal(t, 2*operator.ReadsPerKey*4+1, sm.Cost(), "two keys, ReadsPerKey reads each, four times a second, plus INFO")
	var got sink
	st, err := sm.Step(ctx, &got)
	require.NoError(t, err)
	assert.Equal(t, 2, st.Keys)
	assert.Equal(t, "a", got.locks["hot"].Owner)
	assert.Equal(t, []string{"missing"}, got.absent)
	assert.False(t, sm.Done(time.Now()))
	assert.True(t, sm.Done(time.Now().Add(source.SampleFor)))

	calls, err := src.ScriptCalls(ctx)
	require.NoError(t, err)
	require.NoError(t, client.Eval(ctx, "return 1", nil).Err())
	after, err := src.ScriptCalls(ctx)
	require.NoError(t, err)
	assert.Equal(t, calls+1, after, "script calls are counted from INFO commandstats")
}

func TestNewSamplerCapsKeys(t *testing.T) {
	keys := make([]string, source.SampleMaxKeys+10)
	for i := range keys {
		keys[i] = fmt.Sprint(i)
	}
	sm := source.New(source.Options{}).NewSampler(keys)
	assert.Len(t, sm.Keys(), source.SampleMaxKeys)
	assert.True(t, slices.Equal(keys[:source.SampleMaxKeys], sm.Keys()))
}

// go-redis subscribes again after a reconnect, and what was published meanwhile is lost:
// Take says so, and notifications arrive again afterwards.
func TestKeyspaceReportsAReconnectAsLost(t *testing.T) {
	srv := redistest.StartWith(t, redistest.Config{Args: []string{"--notify-keyspace-events", "Kg$xe"}})
	client := srv.Client(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	src := source.New(source.Options{Client: client})
	take := subscribeKeyspace(ctx, t, src, 0)

	require.NoError(t, client.Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub").Err())
	keys, lost := take()
	assert.True(t, lost, "a reconnected subscription may have missed notifications")
	assert.Empty(t, keys)

	require.NoError(t, client.Set(ctx, "medusa_lock:after", "o", time.Minute).Err())
	keys, lost = take()
	assert.False(t, lost)
	assert.Equal(t, []string{"after"}, keys)
}

// subscribeKeyspace subscribes src to the keyspace notifications of db until the test ends,
// and returns take, which waits for a notification and takes what Keyspace.Take returns.
func subscribeKeyspace(ctx context.Context, t *testing.T, src *source.Source, db int) (take func() (keys []string, lost bool)) {
	t.Helper()
	notified := make(chan struct{}, 1)
	ks, err := src.SubscribeKeyspace(ctx, db, func() {
		select {
		case notified <- struct{}{}:
		default:
		}
	})
	require.NoError(t, err)
	t.Cleanup(ks.Close)
	return func() ([]string, bool) {
		t.Helper()
		select {
		case <-notified:
		case <-ctx.Done():
			t.Fatal("no notification")
		}
		keys, lost, err := ks.Take(10)
		require.NoError(t, err)
		return keys, lost
	}
}
