package cli_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/cli"
	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
)

// getResult is get --json's object, as a script reads it: written out here rather than taken
// from the package, so that a renamed field or tag fails the test as it would break the script.
type getResult struct {
	Key      string `json:"key"`
	RedisKey string `json:"redis_key"`
	Exists   bool   `json:"exists"`
	Type     string `json:"type"`
	Lock     bool   `json:"lock"`
	Owner    string `json:"owner"`
	TTLms    *int64 `json:"ttl_ms"`
	Record   *struct {
		Key        string            `json:"key"`
		Owner      string            `json:"owner"`
		Claim      string            `json:"claim"`
		ExpireAtMs int64             `json:"expire_at_ms"`
		Reentered  bool              `json:"reentered"`
		Current    bool              `json:"current"`
		Fields     map[string]string `json:"fields"`
	} `json:"record"`
}

func getJSON(t *testing.T, e *env, key string, wantCode int) getResult {
	t.Helper()
	r := run(t, "get", key, "--json", "--redis", e.srv.URL)
	requireCode(t, r, wantCode)
	require.Equal(t, 1, strings.Count(r.stdout, "\n"), "one JSON document on one line: %q", r.stdout)
	var g getResult
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &g))
	return g
}

func TestGetALockWithItsHolderRecord(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, e.p.Acquire(context.Background(), []string{"cart:1"}, provider.AcquireOptions{Owner: "worker 1", Expire: time.Minute}))
	r := run(t, "get", "cart:1", "--redis", e.srv.URL)
	requireCode(t, r, cli.ExitOK)
	require.Empty(t, r.stderr)
	for _, want := range []string{
		"key:        cart:1\n", "redis key:  medusa_lock:cart:1\n", "type:       string (a lock)\n",
		"owner:      \"worker 1\"\n", "record:     locktui:{medusa_lock:cart:1}:hold\n",
		"  owner:    \"worker 1\"\n", "  re-entry: no\n", "  current:  yes\n",
	} {
		require.Contains(t, r.stdout, want)
	}
	require.Regexp(t, `(?m)^ttl: +(5\d(\.\d)?s|1m0s)$`, r.stdout)
	require.Regexp(t, `(?m)^  expires: +20\d\d-.*Z \(Redis time\)$`, r.stdout)

	g := getJSON(t, e, "cart:1", cli.ExitOK)
	require.True(t, g.Exists && g.Lock)
	require.Equal(t, "string", g.Type)
	require.Equal(t, "worker 1", g.Owner)
	require.InDelta(t, 60000, *g.TTLms, 2000)
	require.NotNil(t, g.Record)
	require.Equal(t, "worker 1", g.Record.Owner)
	require.NotEmpty(t, g.Record.Claim)
	require.True(t, g.Record.Current)
	require.InDelta(t, time.Now().Add(time.Minute).UnixMilli(), g.Record.ExpireAtMs, 5000)
	require.Equal(t, g.Record.Claim, g.Record.Fields["claim"])

	// A re-entry by the same owner is marked.
	require.NoError(t, e.p.Acquire(context.Background(), []string{"cart:1"}, provider.AcquireOptions{Owner: "worker 1", Expire: provider.NoExpiry}))
	g = getJSON(t, e, "cart:1", cli.ExitOK)
	require.Equal(t, int64(-1), *g.TTLms)
	require.True(t, g.Record.Reentered)
	require.Equal(t, int64(-1), g.Record.ExpireAtMs, "the re-entry left no expiry")
	require.True(t, g.Record.Current)
}

// A lock that stock Medusa took (a plain SET) has no record; one that a stock process took
// over after ours has a record that no longer describes it.
func TestGetAStockLock(t *testing.T) {
	e := newEnv(t)
	client := e.srv.Client(t)
	require.NoError(t, client.Set(context.Background(), "medusa_lock:stock", "stock-owner", 0).Err())
	r := run(t, "get", "stock", "--redis", e.srv.URL)
	requireCode(t, r, cli.ExitOK)
	require.Contains(t, r.stdout, "ttl:        no expiry\n")
	require.Contains(t, r.stdout, "record:     none: "+operator.NoHolderRecord+"\n")
	g := getJSON(t, e, "stock", cli.ExitOK)
	require.Nil(t, g.Record)
	require.Equal(t, "stock-owner", g.Owner)

	require.NoError(t, e.p.Acquire(context.Background(), []string{"k"}, provider.AcquireOptions{Owner: "ours"}))
	require.NoError(t, client.Set(context.Background(), "medusa_lock:k", "theirs", 0).Err())
	g = getJSON(t, e, "k", cli.ExitOK)
	require.Equal(t, "theirs", g.Owner)
	require.NotNil(t, g.Record)
	require.Equal(t, "ours", g.Record.Owner)
	require.False(t, g.Record.Current)
	r = run(t, "get", "k", "--redis", e.srv.URL)
	require.Contains(t, r.stdout, "  current:  no: the lock changed since the record was written")
}

func TestGetAKeyOfAnotherTypeAndAMissingKey(t *testing.T) {
	e := newEnv(t)
	client := e.srv.Client(t)
	require.NoError(t, client.HSet(context.Background(), "medusa_lock:h", "f", "v").Err())
	r := run(t, "get", "h", "--redis", e.srv.URL)
	requireCode(t, r, cli.ExitOK)
	require.Contains(t, r.stdout, "type:       hash (not a lock)\n")
	require.Contains(t, r.stdout, "ttl:        no expiry\n")
	require.NotContains(t, r.stdout, "owner:")
	g := getJSON(t, e, "h", cli.ExitOK)
	require.Equal(t, "hash", g.Type)
	require.True(t, g.Exists)
	require.False(t, g.Lock)
	require.Equal(t, int64(-1), *g.TTLms)

	r = run(t, "get", "missing", "--redis", e.srv.URL)
	requireCode(t, r, cli.ExitConflict)
	require.Equal(t, "key:        missing\nredis key:  medusa_lock:missing\ntype:       none (the key does not exist)\n", r.stdout)
	requireOneErrorLine(t, r, `"missing" is not locked`)
	g = getJSON(t, e, "missing", cli.ExitConflict)
	require.Equal(t, getResult{Key: "missing", RedisKey: "medusa_lock:missing", Type: "none"}, g)
}
