package demo_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/locktui/locktui/events"
	"github.com/locktui/locktui/internal/demo"
	"github.com/locktui/locktui/internal/redisproc"
	"github.com/locktui/locktui/internal/testsupport"
	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const ns = "medusa_lock:"

func TestSimulateOnEachServer(t *testing.T) {
	for _, kind := range []string{demo.KindRedisServer, demo.KindMiniredis} {
		t.Run(kind, func(t *testing.T) {
			srv, err := demo.StartServerWith(t.Context(), demo.ServerOptions{Miniredis: kind == demo.KindMiniredis})
			require.NoError(t, err)
			t.Cleanup(func() { _ = srv.Close() })
			if srv.Kind() != kind {
				t.Fatalf("got a %s, want a %s: %s", srv.Kind(), kind, redisproc.InstallHint)
			}
			client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
			t.Cleanup(func() { _ = client.Close() })
			if kind == demo.KindRedisServer {
				cfg, err := client.ConfigGet(t.Context(), "notify-keyspace-events").Result()
				require.NoError(t, err)
				assert.ElementsMatch(t, []rune("AKE"), []rune(cfg["notify-keyspace-events"]))
			}
			simulate(t, client)
		})
	}
}

// simulate runs the simulation until every kind of activity the console shows has happened,
// then stops it and checks what it left behind.
func simulate(t *testing.T, client *redis.Client) {
	sub, err := events.Subscribe(t.Context(), client, ns)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Close() })
	var logged testsupport.Buffer
	sim := demo.NewSimulator(client, ns, &demo.SimOptions{Seed: 42, Pace: 0.3, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- sim.Run(ctx) }()

	seen := map[provider.EventKind]int{}
	want := []provider.EventKind{provider.EventWaiting, provider.EventAcquired, provider.EventReleased,
		provider.EventRenewed, provider.EventLost}
	require.Eventually(t, func() bool {
		for {
			select {
			case ev := <-sub.C():
				assert.Equal(t, events.SourceDemo, ev.Source)
				seen[ev.Kind]++
				continue
			default:
			}
			break
		}
		for _, k := range want {
			if seen[k] == 0 {
				return false
			}
		}
		return true
	}, 20*time.Second, 20*time.Millisecond, "event kinds seen: %v", seen)

	ops := operator.New(client, &operator.Options{Namespace: ns})
	locks, err := ops.List(t.Context())
	require.NoError(t, err)
	owners := map[string]bool{}
	programs := map[string]bool{}
	noTTL := map[demo.StuckLock]bool{}
	for _, l := range locks {
		owners[l.Owner] = true
		if l.Record != nil {
			programs[l.Record.Holder.Program] = true
		}
		if l.TTL == provider.NoExpiry {
			noTTL[demo.StuckLock{Key: l.Key, Owner: l.Owner}] = true
		}
	}
	assert.GreaterOrEqual(t, len(owners), 4, "locks: %v", locks)
	// Each simulated process names itself in the holder records, as real services do.
	assert.GreaterOrEqual(t, len(programs), 2, "programs in the holder records: %v", programs)
	assert.True(t, programs["medusa-worker"], "the abandoned locks' crashed pods: %v", programs)
	for _, st := range sim.StuckLocks() {
		assert.True(t, noTTL[st], "abandoned lock %v is held without TTL; no-TTL locks: %v", st, noTTL)
	}

	cancel()
	select {
	case err := <-ran:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the simulation did not stop within 10s of its context ending")
	}
	stats := sim.Stats()
	assert.Positive(t, stats.Ops)
	assert.Positive(t, stats.Lost)
	assert.Zero(t, stats.Errors, "stats: %+v", stats)
	// Once Run returned, its locks (except the abandoned ones) were given back or expire soon.
	after, err := ops.List(t.Context())
	require.NoError(t, err)
	for _, l := range after {
		if l.TTL == provider.NoExpiry {
			continue
		}
		assert.NotContains(t, l.Owner, provider.ExecuteOwnerPrefix,
			"Execute locks are released when Run stops: %+v (record %+v); the providers logged:\n%s", l, l.Record, logged.String())
	}
}

func TestStuckLocksFollowTheSeed(t *testing.T) {
	a := demo.NewSimulator(nil, ns, &demo.SimOptions{Seed: 7}).StuckLocks()
	b := demo.NewSimulator(nil, ns, &demo.SimOptions{Seed: 7}).StuckLocks()
	c := demo.NewSimulator(nil, ns, &demo.SimOptions{Seed: 8}).StuckLocks()
	assert.Equal(t, a, b)
	assert.NotEqual(t, a, c)
	require.Len(t, a, 3)
	assert.Equal(t, "migration-scripts-running", a[0].Key)
	assert.Regexp(t, `^migrate:[0-9a-f]{6}$`, a[0].Owner)
	assert.Regexp(t, `^inventory:iitem_01J[0-9A-HJKMNP-TV-Z]{23}$`, a[1].Key)
	assert.Equal(t, provider.DefaultOwner, a[2].Owner)
}

func TestSimulatorRunsOnce(t *testing.T) {
	_, client := startMiniredis(t)
	sim := demo.NewSimulator(client, ns, nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.NoError(t, sim.Run(ctx), "a cancelled simulation stops at once")
	assert.Error(t, sim.Run(t.Context()))
}

func TestSimulateFailsWithoutRedis(t *testing.T) {
	srv, _ := startMiniredis(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	require.NoError(t, srv.Close())
	err := demo.Simulate(t.Context(), client, ns, nil)
	assert.ErrorContains(t, err, "cannot reach Redis")
}

func TestStartServerFallsBackToMiniredis(t *testing.T) {
	// A binary that exits at once: redis-server "fails to start".
	srv, err := demo.StartServerWith(t.Context(), demo.ServerOptions{RedisServer: "false"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	assert.Equal(t, demo.KindMiniredis, srv.Kind())
	assert.Contains(t, srv.Warning(), "exited during start-up")

	srv2, err := demo.StartServerWith(t.Context(), demo.ServerOptions{RedisServer: "no-such-redis-server"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv2.Close() })
	assert.Equal(t, demo.KindMiniredis, srv2.Kind())
	assert.Empty(t, srv2.Warning(), "no redis-server on PATH is the normal case, not a warning")
}

func TestCloseStopsTheServer(t *testing.T) {
	var wg sync.WaitGroup
	for _, mini := range []bool{false, true} {
		srv, err := demo.StartServerWith(t.Context(), demo.ServerOptions{Miniredis: mini})
		require.NoError(t, err)
		assert.Regexp(t, `^redis://127\.0\.0\.1:\d+$`, srv.URL())
		client := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
		require.NoError(t, client.Ping(t.Context()).Err())
		require.NoError(t, srv.Close())
		require.NoError(t, srv.Close(), "Close is idempotent")
		wg.Go(func() {
			defer client.Close()
			assert.Error(t, client.Ping(context.Background()).Err(), "%s still answers after Close", srv.Kind())
		})
	}
	wg.Wait()
}
