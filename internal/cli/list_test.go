package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/budget"
	"github.com/locktui/locktui/internal/cli"
	"github.com/locktui/locktui/provider"
)

// seed takes locks of every kind list shows, plus a foreign key and a key in another namespace.
func seed(t *testing.T, e *env) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, e.p.Acquire(ctx, []string{"cart:2"}, provider.AcquireOptions{Owner: "execute:abc", Expire: time.Minute}))
	require.NoError(t, e.p.Acquire(ctx, []string{"cart:1"}, provider.AcquireOptions{Owner: "worker 1", Expire: provider.NoExpiry}))
	require.NoError(t, e.p.Acquire(ctx, []string{"a"}, provider.AcquireOptions{Owner: "*", Expire: 30 * time.Second}))
	client := e.srv.Client(t)
	require.NoError(t, client.RPush(ctx, "medusa_lock:queue", "x").Err())
	require.NoError(t, client.Set(ctx, "other:k", "o", 0).Err())
}

func TestListTable(t *testing.T) {
	e := newEnv(t)
	r := run(t, "list", "--redis", e.srv.URL)
	requireCode(t, r, cli.ExitOK)
	require.Equal(t, "No locks under namespace \"medusa_lock:\".\n", r.stdout)

	seed(t, e)
	r = run(t, "--redis", e.srv.URL, "list")
	requireCode(t, r, cli.ExitOK)
	require.Empty(t, r.stderr)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	require.Len(t, lines, 5, "table:\n%s", r.stdout)
	require.Regexp(t, `^KEY +OWNER +TTL$`, lines[0])
	require.Regexp(t, `^a +\* +(2\d(\.\d)?|30)s$`, lines[1])
	require.Regexp(t, `^cart:1 +"worker 1" +no expiry$`, lines[2])
	require.Regexp(t, `^cart:2 +execute:abc +(5\d(\.\d)?s|1m0s)$`, lines[3])
	require.Regexp(t, `^queue +\(foreign: not a lock\) +no expiry$`, lines[4])
	// Columns line up.
	col := regexp.MustCompile(`OWNER`).FindStringIndex(lines[0])[0]
	for _, l := range lines[1:] {
		require.NotEqual(t, ' ', rune(l[col]), "column of %q", l)
		require.Equal(t, ' ', rune(l[col-1]), "column of %q", l)
	}
}

func TestListJSON(t *testing.T) {
	e := newEnv(t)
	r := run(t, "list", "--json", "--redis", e.srv.URL)
	requireCode(t, r, cli.ExitOK)
	require.Equal(t, "[]\n", r.stdout)

	seed(t, e)
	r = run(t, "list", "--redis", e.srv.URL, "--json")
	requireCode(t, r, cli.ExitOK)
	require.Empty(t, r.stderr)
	require.Equal(t, 1, strings.Count(r.stdout, "\n"), "one JSON document on one line")

	var got []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	require.Len(t, got, 4)
	ttl := func(i int) float64 { return got[i]["ttl_ms"].(float64) }
	require.InDelta(t, 30000, ttl(0), 2000)
	require.InDelta(t, 60000, ttl(2), 2000)
	for i, g := range got[:3] {
		h := g["holder"].(map[string]any)
		require.Equal(t, float64(os.Getpid()), h["pid"], "the record names the process that took the lock")
		require.Equal(t, "go", h["client"])
		require.Positive(t, h["fencing_token"])
		require.InDelta(t, time.Now().UnixMilli(), h["acquired_at_ms"], float64(time.Minute.Milliseconds()))
		require.Contains(t, h, "host")
		require.Contains(t, h, "program")
		got[i]["holder"] = "record"
	}
	for _, g := range got {
		delete(g, "ttl_ms")
	}
	require.Equal(t, []map[string]any{
		{"key": "a", "redis_key": "medusa_lock:a", "owner": "*", "holder": "record"},
		{"key": "cart:1", "redis_key": "medusa_lock:cart:1", "owner": "worker 1", "holder": "record"},
		{"key": "cart:2", "redis_key": "medusa_lock:cart:2", "owner": "execute:abc", "holder": "record"},
		{"key": "queue", "redis_key": "medusa_lock:queue", "owner": "", "foreign": true, "holder": nil},
	}, got)

	var raw []struct {
		TTL int64 `json:"ttl_ms"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &raw))
	require.Equal(t, int64(-1), raw[1].TTL, "a lock without expiry has ttl_ms -1")
	require.Equal(t, int64(-1), raw[3].TTL)
}

func TestListOtherNamespace(t *testing.T) {
	e := newEnv(t)
	seed(t, e)
	r := run(t, "list", "--json", "--namespace", "other:", "--redis", e.srv.URL)
	requireCode(t, r, cli.ExitOK)
	require.JSONEq(t, `[{"key":"k","redis_key":"other:k","owner":"o","ttl_ms":-1,"holder":null}]`, r.stdout)
}

// --match, --owner and --no-ttl keep the keys that pass all of them, in the table and in JSON.
func TestListFilters(t *testing.T) {
	e := newEnv(t)
	seed(t, e)
	require.NoError(t, e.p.Acquire(context.Background(), []string{"cart:3"}, provider.AcquireOptions{Owner: "worker 1", Expire: time.Minute}))
	keys := func(args ...string) []string {
		t.Helper()
		r := run(t, append([]string{"list", "--json", "--redis", e.srv.URL}, args...)...)
		requireCode(t, r, cli.ExitOK)
		require.Empty(t, r.stderr)
		var got []struct{ Key string }
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
		out := []string{}
		for _, g := range got {
			out = append(out, g.Key)
		}
		return out
	}
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"--match", "cart:*"}, []string{"cart:1", "cart:2", "cart:3"}},
		{[]string{"--match=cart:[13]"}, []string{"cart:1", "cart:3"}},
		{[]string{"--match", "CART:*"}, []string{}}, // case-sensitive, as Redis MATCH
		{[]string{"--match", "?"}, []string{"a"}},
		{[]string{"--owner", "worker 1"}, []string{"cart:1", "cart:3"}},
		{[]string{"--owner", "*"}, []string{"a"}}, // the anonymous owner, not a pattern
		{[]string{"--owner", "worker"}, []string{}},
		{[]string{"--no-ttl"}, []string{"cart:1", "queue"}},
		{[]string{"--no-ttl", "--owner", "worker 1"}, []string{"cart:1"}},
		{[]string{"--match", "cart:*", "--no-ttl", "--owner", "execute:abc"}, []string{}},
	} {
		require.Equal(t, tt.want, keys(tt.args...), "list %q", tt.args)
	}

	r := run(t, "list", "--redis", e.srv.URL, "--match", "nothing:*")
	requireCode(t, r, cli.ExitOK)
	require.Equal(t, "No locks under namespace \"medusa_lock:\" match the filters.\n", r.stdout)
	r = run(t, "list", "--no-ttl", "--redis", e.srv.URL)
	requireCode(t, r, cli.ExitOK)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	require.Len(t, lines, 3, "table:\n%s", r.stdout)
	require.Regexp(t, `^cart:1 +"worker 1" +no expiry$`, lines[1])
}

// Tab completes lock keys and owners from Redis (what the completion scripts ask for).
func TestCompletionOfKeysAndOwners(t *testing.T) {
	e := newEnv(t)
	seed(t, e)
	complete := func(args ...string) []string {
		t.Helper()
		r := run(t, append([]string{"__complete", "--redis", e.srv.URL}, args...)...)
		requireCode(t, r, cli.ExitOK)
		return strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	}
	require.Equal(t, []string{"cart:1", "cart:2", ":4"}, complete("get", "ca"))
	require.Equal(t, []string{":4"}, complete("get", "a", "ca"), "get takes one key")
	require.Equal(t, []string{"a", "cart:1", "cart:2", ":4"}, complete("release", "--force", ""))
	require.Equal(t, []string{"worker 1", ":4"}, complete("release", "k", "--owner", "w"))
	require.Equal(t, []string{":4"}, complete("list", ""), "list takes no keys")
	require.Equal(t, []string{":0"}, complete("run", "a", "--", ""), "the shell completes run's command")
	// Redis unreachable: nothing to offer, and no error in the user's command line.
	e.srv.Stop()
	r := run(t, "__complete", "--redis", e.srv.URL, "get", "")
	requireCode(t, r, cli.ExitOK)
	require.Equal(t, ":4\n", r.stdout)
}

// list walks the database paced like the console's refreshes (docs/console-cost.md), never in
// a burst: with 40,000 other keys its SCANs are charged the ~40,000 keys they examine, and it
// waits for the 20,000-a-second budget (on a virtual clock here) for all but the budget's
// burst of a tenth of that, about 1.9 s, where an unpaced walk would not wait at all.
func TestListIsPacedLikeTheConsole(t *testing.T) {
	e := newEnv(t)
	seed(t, e)
	e.fill(t, "", "", 0, 40_000)

	lim, clock := virtualBudget()
	app := newApp(nil, nil)
	app.Budget = func() *budget.Limiter { return lim }
	r := runApp(t, app, "list", "--redis", e.srv.URL)
	requireCode(t, r, cli.ExitOK)
	require.Contains(t, r.stdout, "cart:2")

	charged := lim.Charged()
	// SCAN's COUNT is a hint: the walk's SCANs number about, not exactly, 40,000/ScanCount.
	require.GreaterOrEqual(t, charged, int64(40_000*9/10), "every SCAN is charged the keys it examines")
	burst := int64(budget.Default / 10)
	require.GreaterOrEqual(t, clock.Elapsed(), time.Duration(charged-burst)*time.Second/budget.Default,
		"list's walk, charged %d, waited less than the budget allows", charged)
}

// A walk that lasts over a second says how far it has come, on one line it rewrites and clears
// before the list is printed; stdout and stderr get none of it. The budget makes a walk of
// 40,000 keys last about 1.9 s, on the virtual clock that also times the progress line: a list
// that no longer paced its walk would show none.
func TestListShowsItsProgressOnALongWalk(t *testing.T) {
	e := newEnv(t)
	seed(t, e)
	e.fill(t, "", "", 0, 40_000)

	var progress bytes.Buffer
	lim, _ := virtualBudget()
	app := newApp(nil, nil)
	app.Budget = func() *budget.Limiter { return lim }
	app.Progress = &progress
	r := runApp(t, app, "list", "--redis", e.srv.URL)
	requireCode(t, r, cli.ExitOK)
	require.Contains(t, r.stdout, "cart:2")

	require.Regexp(t, `^\rlocktui: listing: scanned ~[0-9,]+ of 40,0[0-9]{2} keys \([0-9]+%\)\x1b\[K`, progress.String())
	require.True(t, strings.HasSuffix(progress.String(), "\r\x1b[K"), "the progress line is cleared: %q", progress.String())
	require.NotContains(t, r.stdout+r.stderr, "listing:")
}

// Tab on a namespace that the paced walk cannot finish within the completion's 2 s offers what
// it read until then, not nothing: 3,000 locks among 60,000 other keys take over 3 s at the
// budget's 20,000 keys a second.
func TestCompletionOnALargeDatabaseOffersWhatItRead(t *testing.T) {
	e := newEnv(t)
	e.fill(t, "cart", "o", 3_000, 60_000)

	r := run(t, "__complete", "--redis", e.srv.URL, "get", "ca")
	requireCode(t, r, cli.ExitOK)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	require.Equal(t, ":4", lines[len(lines)-1], "the completion directive closes the output")
	offered := lines[:len(lines)-1]
	require.NotEmpty(t, offered, "a walk cut short by the completion's timeout offers the keys it read")
	for _, k := range offered {
		require.True(t, strings.HasPrefix(k, "cart:"), "offered %q", k)
	}
}
