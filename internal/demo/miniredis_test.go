package demo_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/locktui/locktui/internal/demo"
	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startMiniredis starts the in-process demo server and a client for it.
func startMiniredis(t *testing.T) (*demo.Server, *redis.Client) {
	t.Helper()
	srv, err := demo.StartServerWith(t.Context(), demo.ServerOptions{Miniredis: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	require.Equal(t, demo.KindMiniredis, srv.Kind())
	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = client.Close() })
	return srv, client
}

// kinds records the kinds of provider events, safe for the lease goroutine.
type kinds struct {
	mu  sync.Mutex
	got map[provider.EventKind]int
}

func (k *kinds) LockEvent(e provider.Event) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.got == nil {
		k.got = map[provider.EventKind]int{}
	}
	k.got[e.Kind]++
}

func (k *kinds) count(kind provider.EventKind) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.got[kind]
}

// TestProviderOnMiniredis runs every provider call the demo and the console make against the
// in-process server: the Lua scripts (SET NX EX, GET, EXPIRE, DEL, TYPE, UNLINK), EVALSHA with
// the NOSCRIPT fallback, PTTL, and SCAN MATCH with an escaped namespace.
func TestProviderOnMiniredis(t *testing.T) {
	_, client := startMiniredis(t)
	ctx := t.Context()
	// Glob characters in the namespace: SCAN MATCH must take them literally.
	const ns = "shop*[1]?:"
	obs := &kinds{}
	p := provider.New(client, &provider.Options{Namespace: ns, Observer: obs, Logger: slog.New(slog.DiscardHandler),
		DefaultRetryInterval: 10 * time.Millisecond, MaximumRetryInterval: 50 * time.Millisecond})
	require.NoError(t, client.Set(ctx, "shopX1Y:cart:1", "*", 0).Err(), "a key the pattern would match unescaped")
	ops := operator.New(client, &operator.Options{Namespace: ns})

	// Acquire, conflict, re-entry, anonymous lock without TTL.
	require.NoError(t, p.Acquire(ctx, []string{"cart:1", "cart:2"}, provider.AcquireOptions{Owner: "a", Expire: 10 * time.Second}))
	err := p.Acquire(ctx, []string{"cart:2"}, provider.AcquireOptions{Owner: "b"})
	require.ErrorIs(t, err, provider.ErrNotAcquired)
	assert.Equal(t, `Failed to acquire lock for key "cart:2"`, err.Error())
	require.NoError(t, p.Acquire(ctx, []string{"cart:1"}, provider.AcquireOptions{Owner: "a", Expire: 10 * time.Second}))
	require.NoError(t, p.Acquire(ctx, []string{"stuck"}, provider.AcquireOptions{Expire: provider.NoExpiry}))
	require.NoError(t, client.HSet(ctx, ns+"foreign", "f", "v").Err())

	locks, err := ops.List(ctx)
	require.NoError(t, err)
	byKey := map[string]operator.Lock{}
	for _, l := range locks {
		byKey[l.Key] = l
	}
	require.Len(t, byKey, 4, "List = %v", locks)
	assert.Equal(t, "a", byKey["cart:1"].Owner)
	assert.Greater(t, byKey["cart:1"].TTL, 8*time.Second)
	assert.LessOrEqual(t, byKey["cart:1"].TTL, 10*time.Second)
	assert.Equal(t, provider.NoExpiry, byKey["stuck"].TTL)
	assert.True(t, byKey["foreign"].Foreign)

	// Release: another owner's release fails, the owner's succeeds.
	ok, err := p.Release(ctx, []string{"cart:1"}, "b")
	require.NoError(t, err)
	assert.False(t, ok)
	ok, err = p.Release(ctx, []string{"cart:1", "cart:2"}, "a")
	require.NoError(t, err)
	assert.True(t, ok)

	// ReleaseAll("*"): TYPE in Lua skips the foreign key; the other namespace is not scanned.
	n, err := p.ReleaseAll(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.EqualValues(t, 1, client.Exists(ctx, ns+"foreign").Val())
	assert.EqualValues(t, 1, client.Exists(ctx, "shopX1Y:cart:1").Val())
	matched, _, err := client.Scan(ctx, 0, `shop\*\[1\]\?:*`, 100).Result()
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{ns + "foreign"}, matched, "SCAN MATCH takes escaped glob characters literally")

	// A flushed script cache: EVALSHA fails with NOSCRIPT and the provider (and the operator's
	// Inspector below) fall back to EVAL.
	require.NoError(t, client.Do(ctx, "SCRIPT", "FLUSH").Err())
	require.NoError(t, p.Acquire(ctx, []string{"order:1"}, provider.AcquireOptions{Owner: "o", Expire: time.Minute}))

	// ForceRelease compares the owner; ForceReleaseAny reports who held it.
	how, err := ops.ForceReleaseOwner(ctx, "order:1", "someone-else", operator.TellHolderFirst)
	require.NoError(t, err)
	assert.Equal(t, operator.NotReleased, how)
	owner, how, err := ops.ForceReleaseAny(ctx, "order:1", operator.TellHolderFirst)
	require.NoError(t, err)
	assert.Equal(t, operator.Freed, how, "a plain acquisition cannot be told: freed at once")
	assert.Equal(t, "o", owner)

	// TTLs run down with the clock: a waiter gets a key whose holder never releases it.
	require.NoError(t, p.Acquire(ctx, []string{"inventory:1"}, provider.AcquireOptions{Owner: "gone", Expire: time.Second}))
	waitCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	require.NoError(t, p.Acquire(waitCtx, []string{"inventory:1"}, provider.AcquireOptions{Owner: "next", AwaitQueue: true}))
	assert.Positive(t, obs.count(provider.EventWaiting))

	// Execute renews its lease (EXPIRE in extend.lua) while the job runs.
	err = p.Execute(ctx, []string{"payment:1"}, func(ctx context.Context) error {
		return waitFor(ctx, func() bool { return obs.count(provider.EventRenewed) > 0 })
	}, provider.ExecuteOptions{Expire: time.Second})
	require.NoError(t, err)

	// Execute loses its lease when someone deletes the key.
	err = p.Execute(ctx, []string{"payment:2"}, func(ctx context.Context) error {
		if err := client.Del(ctx, ns+"payment:2").Err(); err != nil {
			return err
		}
		<-ctx.Done()
		return context.Cause(ctx)
	}, provider.ExecuteOptions{Expire: time.Second})
	require.ErrorIs(t, err, provider.ErrLockLost)
	assert.Equal(t, 1, obs.count(provider.EventLost))

	// Execute times out on a held key.
	err = p.Execute(ctx, []string{"inventory:1"}, func(context.Context) error { return nil },
		provider.ExecuteOptions{Timeout: 100 * time.Millisecond})
	require.ErrorIs(t, err, provider.ErrTimedOut)
}

// waitFor polls cond until it holds or ctx ends.
func waitFor(ctx context.Context, cond func() bool) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return errors.New("condition not met before the context ended")
		case <-tick.C:
		}
	}
	return nil
}
