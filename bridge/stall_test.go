package bridge_test

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/bridge"
	"github.com/locktui/locktui/provider"
)

// bridgeClientName names the bridge's Redis connections in the tests that kill them.
const bridgeClientName = "bridge-under-test"

// stallable gives the bridge a Redis client whose calls wait as long as Redis does (no read
// timeout), with a pool large enough for every stalled call, and named bridgeClientName.
func stallable(t *testing.T) func(*bridge.Config) {
	return withRedisOptions(t, func(o *redis.Options) {
		o.ReadTimeout = -1
		o.PoolSize = 64
		o.ClientName = bridgeClientName
	})
}

// warmUp has Redis load the acquire and release scripts, so that a call held by pauseWrites
// is the script itself, not an EVALSHA that will come back NOSCRIPT and be sent again.
func (c *client) warmUp() {
	c.t.Helper()
	c.ok(req{"id": "warm-up-1", "op": "acquire", "keys": []string{"warm-up"}, "owner": "warm-up"})
	c.ok(req{"id": "warm-up-2", "op": "release", "keys": []string{"warm-up"}, "owner": "warm-up"})
}

// warmUpLeases is warmUp for a test that pauses writes under a lease: a lease taken and released
// starts the bridge provider's listener, which then stays subscribed (it lingers after the last
// lease), so that a lease taken after it is not checked on the listener's first subscription,
// a script that a pause would hold in place of the one the test means to hold.
func (c *client) warmUpLeases(h *harness) {
	c.t.Helper()
	id := c.ok(req{"id": "warm-up-lease", "op": "lease", "keys": []string{"warm-up"}})["lease"].(string)
	c.ok(req{"id": "warm-up-release", "op": "lease_release", "lease": id})
	require.Eventually(c.t, func() bool {
		subs, err := h.rdb.PubSubNumSub(context.Background(), provider.FreeChannel(namespace)).Result()
		return err == nil && subs[provider.FreeChannel(namespace)] > 0
	}, eventually, tick, "the bridge's listener is subscribed")
}

// pauseWrites makes Redis hold every write command and script (CLIENT PAUSE WRITE) until
// unpause is called or the test ends; reads, including the test's own GETs, go on.
func (h *harness) pauseWrites() (unpause func()) {
	h.t.Helper()
	ctx := context.Background()
	require.NoError(h.t, h.rdb.Do(ctx, "CLIENT", "PAUSE", "60000", "WRITE").Err())
	var once sync.Once
	unpause = func() {
		once.Do(func() { require.NoError(h.t, h.rdb.Do(ctx, "CLIENT", "UNPAUSE").Err()) })
	}
	h.t.Cleanup(unpause)
	return unpause
}

// awaitHeldCommands waits until Redis holds at least n commands (paused clients count as
// blocked clients).
func (h *harness) awaitHeldCommands(n int) {
	h.t.Helper()
	require.Eventually(h.t, func() bool {
		info, err := h.rdb.Info(context.Background(), "clients").Result()
		require.NoError(h.t, err)
		for line := range strings.SplitSeq(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "blocked_clients:"); ok {
				got, err := strconv.Atoi(v)
				require.NoError(h.t, err)
				return got >= n
			}
		}
		return false
	}, eventually, tick, "Redis never held %d command(s)", n)
}

// killBridgeConns closes every Redis connection of the bridge's client (see stallable).
func (h *harness) killBridgeConns() {
	h.t.Helper()
	ctx := context.Background()
	list, err := h.rdb.ClientList(ctx).Result()
	require.NoError(h.t, err)
	killed := 0
	for line := range strings.SplitSeq(list, "\n") {
		fields := strings.Fields(line)
		if !slices.Contains(fields, "name="+bridgeClientName) {
			continue
		}
		for _, f := range fields {
			if id, ok := strings.CutPrefix(f, "id="); ok {
				require.NoError(h.t, h.rdb.Do(ctx, "CLIENT", "KILL", "ID", id).Err())
				killed++
			}
		}
	}
	require.NotZero(h.t, killed, "no connection named %s in:\n%s", bridgeClientName, list)
}

// logRecorder is a slog.Handler that keeps every record, for tests that wait on the bridge's
// logs.
type logRecorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func recordLogs(r *logRecorder) func(*bridge.Config) {
	return func(c *bridge.Config) { c.Logger = slog.New(r) }
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec.Clone())
	return nil
}

// WithAttrs drops the attributes (connection ids and the like): the tests look at messages
// and at the attributes of the record itself.
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *logRecorder) WithGroup(string) slog.Handler      { return r }

// find returns the attributes of the first record with message msg, and whether there is one.
func (r *logRecorder) find(msg string) (map[string]slog.Value, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range r.records {
		if rec.Message != msg {
			continue
		}
		attrs := map[string]slog.Value{}
		rec.Attrs(func(a slog.Attr) bool {
			attrs[a.Key] = a.Value
			return true
		})
		return attrs, true
	}
	return nil, false
}

// await waits for a record with message msg and returns its attributes.
func (r *logRecorder) await(t *testing.T, msg string) map[string]slog.Value {
	t.Helper()
	var attrs map[string]slog.Value
	require.Eventually(t, func() bool {
		var ok bool
		attrs, ok = r.find(msg)
		return ok
	}, eventually, tick, "no log %q", msg)
	return attrs
}
