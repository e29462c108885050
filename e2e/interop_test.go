//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"testing"

	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Stock Medusa 2.21.2's conflict messages, which every client must show verbatim.
const (
	msgNotAcquired = `Failed to acquire lock for key "e2e:shared"`
	msgTimedOut    = "Timed-out acquiring lock."
)

// TestBridgeAndStockExcludeEachOther puts a bridge client, a stock Medusa process and the CLI on
// one key: whoever holds it, the others are refused with stock's messages; `locktui list --json`
// shows a lock a stock process took, with its owner, and `locktui release --force` frees it.
func TestBridgeAndStockExcludeEachOther(t *testing.T) {
	const key = "e2e:shared"
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	b := startBridge(t, srv.URL)
	bridge := startWorker(t, "bridge", backendBridge, srv.URL, b)
	stock := startWorker(t, "stock", backendStock, srv.URL, nil)
	awaitWorkers(t, bridge, stock)
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	defer cancel()
	acquire := func(w *worker, owner string, expire int) error {
		return w.call(ctx, "acquire", map[string]any{"keys": []string{key}, "options": map[string]any{"ownerId": owner, "expire": expire}}, nil)
	}

	// The stock process holds the key (no expiry, as stock's acquire without expire).
	require.NoError(t, acquire(stock, "stock-owner", 0))
	assertConflict(t, acquire(bridge, "bridge-owner", 30), msgNotAcquired, "bridge acquire while stock holds")
	assertConflict(t, bridge.call(ctx, "hold", map[string]any{"key": key, "timeout": 1, "expire": 10}, nil),
		msgTimedOut, "bridge execute while stock holds")
	r := locktui(ctx, t, srv.URL, "run", key, "--timeout", "1", "--", "true")
	assert.Equal(t, 75, r.code, "locktui run while stock holds: %s", r.stderr)
	assert.Contains(t, r.stderr, msgTimedOut)

	// The CLI sees the stock lock with its owner and can force it free.
	assert.Equal(t, lockJSON{Key: key, RedisKey: "medusa_lock:" + key, Owner: "stock-owner", TTLms: -1},
		listLock(ctx, t, srv.URL, key))
	r = locktui(ctx, t, srv.URL, "release", key, "--force")
	require.Equal(t, 0, r.code, "release --force: %s", r.stderr)
	assert.Contains(t, r.stdout, `released "e2e:shared" (owner "stock-owner")`)
	assert.Zero(t, rdb.Exists(ctx, "medusa_lock:"+key).Val(), "release --force deleted the key")

	// Now the bridge client holds it, and stock is refused in turn.
	require.NoError(t, acquire(bridge, "bridge-owner", 30))
	assertConflict(t, acquire(stock, "stock-owner", 0), msgNotAcquired, "stock acquire while the bridge client holds")
	assertConflict(t, stock.call(ctx, "hold", map[string]any{"key": key, "timeout": 1, "expire": 10}, nil),
		msgTimedOut, "stock execute while the bridge client holds")
	held := listLock(ctx, t, srv.URL, key)
	assert.Equal(t, "bridge-owner", held.Owner)
	assert.True(t, held.TTLms > 0 && held.TTLms <= 30_000, "ttl_ms %d is the bridge client's expire", held.TTLms)

	// Releases are owner-checked across clients.
	var released bool
	require.NoError(t, stock.call(ctx, "release", map[string]any{"keys": []string{key}, "options": map[string]any{"ownerId": "stock-owner"}}, &released))
	assert.False(t, released, "stock cannot release the bridge client's lock")
	require.NoError(t, bridge.call(ctx, "release", map[string]any{"keys": []string{key}, "options": map[string]any{"ownerId": "bridge-owner"}}, &released))
	assert.True(t, released)
	assert.Zero(t, rdb.Exists(ctx, "medusa_lock:"+key).Val())
}

// assertConflict checks that err is the Medusa conflict with the stock message msg.
func assertConflict(t *testing.T, err error, msg, what string) {
	t.Helper()
	var we *workerError
	if !errors.As(err, &we) {
		t.Errorf("%s: got %v, want the conflict %q", what, err, msg)
		return
	}
	assert.Equal(t, workerError{Type: "conflict", Message: msg}, workerError{Type: we.Type, Message: we.Message}, what)
}

// lockJSON is one element of `locktui list --json`.
type lockJSON struct {
	Key      string `json:"key"`
	RedisKey string `json:"redis_key"`
	Owner    string `json:"owner"`
	TTLms    int64  `json:"ttl_ms"`
	Foreign  bool   `json:"foreign"`
}

// listLock runs `locktui list --json` and returns the entry of key, failing if it is missing.
func listLock(ctx context.Context, t *testing.T, redisURL, key string) lockJSON {
	t.Helper()
	r := locktui(ctx, t, redisURL, "list", "--json")
	require.Equal(t, 0, r.code, "locktui list --json: %s", r.stderr)
	var locks []lockJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &locks), "locktui list --json printed %q", r.stdout)
	for _, l := range locks {
		if l.Key == key {
			return l
		}
	}
	t.Fatalf("locktui list --json does not show %q: %s", key, r.stdout)
	return lockJSON{}
}

// locktui runs the locktui binary against redisURL and returns its outcome.
func locktui(ctx context.Context, t *testing.T, redisURL string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binaries(t).locktui, append([]string{"--redis", redisURL}, args...)...)
	return runCommand(ctx, cmd)
}
