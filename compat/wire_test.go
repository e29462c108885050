package compat_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/internal/testsupport/stocknode"
	"github.com/locktui/locktui/provider"
)

// call is one logical acquire: the same arguments for both providers.
type call struct {
	owner  string
	expire float64 // seconds, 0 = none
}

// wireCases are sequences of acquires by one owner on one key, and the value and TTL the key
// must end with (TTL -1: no expiry).
var wireCases = []struct {
	name      string
	calls     []call
	wantArgs  []string // the TTL argument of each call
	wantValue string
	wantTTL   time.Duration
}{
	{"anonymous without expire", []call{{"", 0}}, []string{"0"}, "*", -1},
	{"named with expire", []call{{"user_1", 10}}, []string{"10"}, "user_1", 10 * time.Second},
	{"sub-second expire rounds to 1 s", []call{{"user_1", 0.5}}, []string{"1"}, "user_1", time.Second},
	{"long expire", []call{{"user_1", 3600}}, []string{"3600"}, "user_1", time.Hour},
	{"re-entry rewrites the TTL", []call{{"o", 10}, {"o", 200}}, []string{"10", "200"}, "o", 200 * time.Second},
	{"re-entry without expire clears the TTL", []call{{"o", 10}, {"o", 0}}, []string{"10", "0"}, "o", -1},
	{"odd owner bytes", []call{{"Ωwner:\"q\" *", 30}}, []string{"30"}, "Ωwner:\"q\" *", 30 * time.Second},
}

// TestWireCompat: the same logical calls give identical script arguments and identical Redis
// keys, values and TTLs on both sides.
func TestWireCompat(t *testing.T) {
	t.Run("default namespace", func(t *testing.T) {
		e := newEnv(t, "", &stocknode.Options{Trace: true}, nil)
		ctx := testContext(t)
		checkWire(ctx, t, e)
		checkExecuteOwners(ctx, t, e)
	})
	t.Run("custom namespace", func(t *testing.T) {
		e := newEnv(t, "shop{eu}:locks:", &stocknode.Options{Trace: true}, nil)
		checkWire(testContext(t), t, e)
	})
}

// checkWire runs every wire case on both sides, on keys that differ only in their first
// segment, and compares the script arguments each side sent and what Redis holds.
func checkWire(ctx context.Context, t *testing.T, e *env) {
	rec := &redistest.Recorder{}
	e.goP.Client().AddHook(rec)
	var want, expiring []string
	for i, c := range wireCases {
		// Keys with bytes that must survive verbatim: UTF-8, glob characters, spaces, slashes.
		suffix := string(rune('a'+i)) + ":cart/ü *?[1]"
		goKey, stockKey := "go-"+suffix, "stock-"+suffix
		t.Run(c.name, func(t *testing.T) {
			for _, cl := range c.calls {
				require.NoError(t, e.goP.Acquire(ctx, []string{goKey}, provider.AcquireOptions{
					Owner: cl.owner, Expire: provider.StockAcquireExpire(time.Duration(cl.expire * float64(time.Second)))}))
				require.NoError(t, e.stock.Acquire(ctx, []string{stockKey}, stocknode.AcquireArgs{
					OwnerID: cl.owner, Expire: cl.expire}))
			}
			// ARGV: owner and TTL in whole seconds ("0" for none); stock adds awaitQueue.
			goArgs := scriptArgs(rec, e.ns+goKey)
			stockCalls := e.stock.ScriptCalls(e.ns + stockKey)
			require.Len(t, goArgs, len(c.calls))
			require.Len(t, stockCalls, len(c.calls))
			for j := range c.calls {
				require.Equal(t, "acquireLock", stockCalls[j].Name)
				require.Equal(t, []string{c.wantArgs[j], "false"}, stockCalls[j].Args[1:], "stock TTL and awaitQueue")
				require.Equal(t, stockCalls[j].Args[:2], goArgs[j][:2], "Go sends what stock sends")
			}
			if c.wantTTL == time.Second {
				return // the key may already have expired: its TTL argument was checked above
			}
			for _, key := range []string{goKey, stockKey} {
				got, err := e.rdb.Get(ctx, e.ns+key).Result()
				require.NoError(t, err, "Redis key %q", e.ns+key)
				require.Equal(t, c.wantValue, got, "value of %q", key)
				requireTTL(t, c.wantTTL, e.ttl(ctx, t, key), key)
			}
		})
		if c.wantTTL == time.Second {
			expiring = append(expiring, e.ns+goKey, e.ns+stockKey)
		} else {
			want = append(want, e.ns+goKey, e.ns+stockKey)
		}
	}
	keys, err := e.rdb.Keys(ctx, e.ns+"*").Result()
	require.NoError(t, err)
	keys = slices.DeleteFunc(keys, func(k string) bool { return slices.Contains(expiring, k) })
	slices.Sort(keys)
	slices.Sort(want)
	require.Equal(t, want, keys, "both sides wrote exactly namespace+key")
}

// scriptArgs returns the ARGV of the successful script calls rec saw on redisKey, oldest first:
// EVAL/EVALSHA <script> <numkeys> <key> [<key>…] <argv…> whose first key is redisKey (a NOSCRIPT
// retry counts once). Stock sends one key; the Go provider also names the lock's holder record,
// outside the namespace.
func scriptArgs(rec *redistest.Recorder, redisKey string) [][]string {
	var out [][]string
	for _, c := range rec.Calls() {
		name, args := c.Name(), c.Cmd.Args()
		if (name != "evalsha" && name != "eval") || c.Replied.IsZero() || c.Err != nil || len(args) < 4 {
			continue
		}
		numKeys, err := strconv.Atoi(fmt.Sprint(args[2]))
		if err != nil || numKeys < 1 || len(args) < 3+numKeys || fmt.Sprint(args[3]) != redisKey {
			continue
		}
		argv := make([]string, 0, len(args)-3-numKeys)
		for _, a := range args[3+numKeys:] {
			argv = append(argv, fmt.Sprint(a))
		}
		out = append(out, argv)
	}
	return out
}

// requireTTL checks a TTL in whole seconds: exactly -1 for none, else at most want and no more
// than a few seconds below it (the reads may come late on a loaded machine).
func requireTTL(t *testing.T, want, got time.Duration, key string) {
	t.Helper()
	if want < 0 {
		require.Equal(t, want, got, "TTL of %q", key)
		return
	}
	require.LessOrEqual(t, got, want, "TTL of %q", key)
	require.Greater(t, got, want-5*time.Second, "TTL of %q", key)
	if want == time.Second {
		require.Equal(t, time.Second, got, "TTL of %q", key)
	}
}

// checkExecuteOwners: a Go Execute and a stock execute each own their key as
// "execute:<uuid v4>", with the default 60 s lease or the expire asked for.
func checkExecuteOwners(ctx context.Context, t *testing.T, e *env) {
	for _, c := range []struct {
		name   string
		expire float64
		want   time.Duration
	}{{"default lease", 0, 60 * time.Second}, {"lease of 900 s", 900, 900 * time.Second}} {
		t.Run("execute owner, "+c.name, func(t *testing.T) {
			var goOwner string
			var goTTL time.Duration
			err := e.goP.Execute(ctx, []string{"ex:go"}, func(ctx context.Context) error {
				goOwner = e.owner(ctx, t, "ex:go")
				goTTL = e.ttl(ctx, t, "ex:go")
				return nil
			}, provider.ExecuteOptions{Timeout: 30 * time.Second, Expire: time.Duration(c.expire * float64(time.Second))})
			require.NoError(t, err)

			held, err := e.stock.ExecuteAsync([]string{"ex:stock"}, stocknode.HoldJob("owner"), stocknode.ExecuteArgs{Timeout: 30, Expire: c.expire})
			require.NoError(t, err)
			require.NoError(t, held.Started(ctx))
			stockOwner := e.owner(ctx, t, "ex:stock")
			stockTTL := e.ttl(ctx, t, "ex:stock")
			require.NoError(t, held.Finish(ctx))
			_, err = held.Wait(ctx)
			require.NoError(t, err)

			require.Regexp(t, executeOwner, goOwner)
			require.Regexp(t, executeOwner, stockOwner)
			require.Len(t, goOwner, 44)
			require.Len(t, stockOwner, 44)
			requireTTL(t, c.want, goTTL, "ex:go")
			requireTTL(t, c.want, stockTTL, "ex:stock")
			require.Empty(t, e.owner(ctx, t, "ex:go"), "Go Execute released its key")
			require.Empty(t, e.owner(ctx, t, "ex:stock"), "stock execute released its key")
		})
	}
}
