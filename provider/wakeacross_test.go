package provider_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/testsupport/locktest"
	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/provider"
)

// awaitLive blocks until p's wake-up subscription is confirmed: from then on a release by
// anyone wakes p's waiters.
func awaitLive(t *testing.T, p *provider.Provider) {
	t.Helper()
	require.Eventually(t, func() bool { return provider.WakeupsLive(p) }, wait, time.Millisecond,
		"the wake-up subscription was never confirmed")
}

// slowOpts are options whose waiters only ever retry early when woken (see slowBackoff); their
// fair-queue tickets need no refresh within a test either.
func slowOpts(obs provider.Observer, fair bool) *provider.Options {
	return &provider.Options{DefaultRetryInterval: slowBackoff, MaximumRetryInterval: slowBackoff,
		Observer: obs, FairQueue: fair, QueueTicketTTL: time.Hour}
}

// A release by another Provider (as another process would make it) wakes the waiter at once:
// with a backoff of a minute, only the wake-up explains a waiter done within wait.
func TestForeignReleaseWakesAWaiter(t *testing.T) {
	for _, fair := range []bool{false, true} {
		t.Run(map[bool]string{false: "polling mode", true: "fair queue"}[fair], func(t *testing.T) {
			noLeaks(t)
			obs, waiting := waitSignal()
			e := newEnv(t, slowOpts(obs, fair))
			other := locktest.NewProvider(t, e.Srv.Client(t), &provider.Options{Namespace: e.NS, FairQueue: fair})
			require.NoError(t, other.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: "holder"}))
			done := goAcquire(t, e.P, []string{"k"}, "me")
			awaitWaiting(t, waiting, "me")
			awaitLive(t, e.P)
			ok, err := other.Release(ctx(t), []string{"k"}, "holder")
			require.NoError(t, err)
			require.True(t, ok)
			require.NoError(t, result(t, done, "the waiter"))
			e.RequireOwner("k", "me")
			// No waiter left: the listener and its connection are gone.
			require.Eventually(t, func() bool { return !provider.Listening(e.P) && !provider.WakeupsLive(e.P) },
				wait, time.Millisecond)
		})
	}
}

// With keyspace notifications on, stock-style writes from a raw client (a Medusa process's
// release, a key's expiry) wake a waiter too.
func TestStockReleaseAndExpiryWakeAWaiterWithKeyspaceNotifications(t *testing.T) {
	noLeaks(t)
	srv := redistest.StartWith(t, redistest.Config{Args: []string{"--notify-keyspace-events", "Kgx"}})
	obs, waiting := waitSignal()
	e := newEnvOn(t, srv, slowOpts(obs, true))
	require.NoError(t, e.RDB.SetNX(ctx(t), e.Key("del"), "stock", 0).Err())
	require.NoError(t, e.RDB.SetNX(ctx(t), e.Key("exp"), "stock", 0).Err())
	deleted := goAcquire(t, e.P, []string{"del"}, "a")
	awaitWaiting(t, waiting, "a")
	expired := goAcquire(t, e.P, []string{"exp"}, "b")
	awaitWaiting(t, waiting, "b")
	awaitLive(t, e.P)
	require.NoError(t, e.RDB.Del(ctx(t), e.Key("del")).Err())
	require.NoError(t, result(t, deleted, "the waiter on a deleted key"))
	e.RequireOwner("del", "a")
	require.NoError(t, e.RDB.PExpire(ctx(t), e.Key("exp"), 50*time.Millisecond).Err())
	require.NoError(t, result(t, expired, "the waiter on an expired key"))
	e.RequireOwner("exp", "b")
}

// On a Cluster, the release script's PUBLISH reaches the listener whichever node holds the key
// and whichever node the listener's connection is on.
func TestClusterReleaseWakesAWaiter(t *testing.T) {
	cl := redistest.StartCluster(t, 2).Client(t)
	obs, waiting := waitSignal()
	opts := slowOpts(obs, true)
	opts.Namespace = locktest.Namespace(t)
	p := locktest.NewProvider(t, cl, opts)
	other := locktest.NewProvider(t, cl, &provider.Options{Namespace: opts.Namespace, FairQueue: true})
	// Keys on both masters (slots of "a".."f" spread over both halves).
	for _, k := range []string{"a", "b", "c", "d", "e", "f"} {
		require.NoError(t, other.Acquire(ctx(t), []string{k}, provider.AcquireOptions{Owner: "holder"}))
		done := goAcquire(t, p, []string{k}, "me:"+k)
		awaitWaiting(t, waiting, "me:"+k)
		awaitLive(t, p)
		ok, err := other.Release(ctx(t), []string{k}, "holder")
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, result(t, done, "the waiter on "+k))
		owner, err := cl.Get(ctx(t), opts.Namespace+k).Result()
		require.NoError(t, err)
		require.Equal(t, "me:"+k, owner)
	}
}

// rawTicket counts the live tickets in the fair queue of key.
func queueLen(t *testing.T, rdb *redis.Client, redisKey string) int64 {
	t.Helper()
	n, err := rdb.ZCard(ctx(t), "locktui:{"+redisKey+"}:tickets").Result()
	require.NoError(t, err)
	return n
}

// cancelWait returns a context for a waiter that the test ends itself.
func cancelWait(t *testing.T) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	return c, cancel
}

// gatedSubscriber is a client whose subscriptions wait until open is closed, as over a slow
// link: the Provider's wake-up listener is not live until then.
type gatedSubscriber struct {
	*redis.Client
	open chan struct{}
}

// Subscribe waits for open, then subscribes.
func (g gatedSubscriber) Subscribe(ctx context.Context, channels ...string) *redis.PubSub {
	select {
	case <-g.open:
	case <-ctx.Done():
	}
	return g.Client.Subscribe(ctx, channels...)
}

// A release that comes after a waiter found the key held but before its Provider's wake-up
// subscription is confirmed is heard by nobody: once the subscription is confirmed, the
// waiters retry at once instead of sleeping out their backoff.
func TestAReleaseBeforeTheSubscriptionIsConfirmedIsNotMissed(t *testing.T) {
	for _, fair := range []bool{false, true} {
		t.Run(map[bool]string{false: "polling mode", true: "fair queue"}[fair], func(t *testing.T) {
			noLeaks(t)
			obs, waiting := waitSignal()
			opts := slowOpts(obs, fair)
			opts.Namespace = locktest.Namespace(t)
			gate := gatedSubscriber{Client: shared.Client(t), open: make(chan struct{})}
			p := locktest.NewProvider(t, gate, opts)
			other := locktest.NewProvider(t, shared.Client(t), &provider.Options{Namespace: opts.Namespace, FairQueue: fair})
			require.NoError(t, other.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: "holder"}))
			done := goAcquire(t, p, []string{"k"}, "me")
			awaitWaiting(t, waiting, "me")
			ok, err := other.Release(ctx(t), []string{"k"}, "holder")
			require.NoError(t, err)
			require.True(t, ok)
			require.False(t, provider.WakeupsLive(p), "the listener's connection is still held back")
			close(gate.open)
			require.NoError(t, result(t, done, "the waiter"))
		})
	}
}
