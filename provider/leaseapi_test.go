package provider_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/locktui/locktui/provider"
	"github.com/stretchr/testify/require"
)

func TestAcquireLeaseAndRelease(t *testing.T) {
	noLeaks(t)
	e := newEnv(t, nil)
	l, err := e.P.AcquireLease(ctx(t), []string{"b", "a", "b"}, provider.LeaseOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = l.Release(context.Background()) })
	require.Equal(t, []string{"a", "b"}, l.Keys())
	require.Regexp(t, executeOwner, l.Owner())
	for _, k := range l.Keys() {
		e.RequireOwner(k, l.Owner())
		require.Equal(t, int64(60), e.ttl(k))
	}
	require.NoError(t, l.Err())
	select {
	case <-l.Done():
		t.Fatal("Done is closed while the lease is held")
	default:
	}

	ok, err := l.Release(ctx(t))
	require.NoError(t, err)
	require.True(t, ok)
	e.RequireFree("a")
	e.RequireFree("b")
	awaitDone(t, l)
	require.NoError(t, l.Err(), "a released lease is not lost")

	ok, err = l.Release(ctx(t))
	require.NoError(t, err)
	require.True(t, ok, "a second Release returns the first result")
}

func TestAcquireLeaseWithOwnerAndExpire(t *testing.T) {
	e := newEnv(t, nil)
	l, err := e.P.AcquireLease(ctx(t), []string{"k"}, provider.LeaseOptions{Owner: "worker-1", Expire: 30 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = l.Release(context.Background()) })
	require.Equal(t, "worker-1", l.Owner())
	e.RequireOwner("k", "worker-1")
	require.Equal(t, int64(30), e.ttl("k"))
	ok, err := l.Release(ctx(t))
	require.NoError(t, err)
	require.True(t, ok)
}

func TestAcquireLeaseNeedsAKey(t *testing.T) {
	e := newEnv(t, nil)
	l, err := e.P.AcquireLease(ctx(t), nil, provider.LeaseOptions{})
	require.ErrorIs(t, err, provider.ErrInvalidArgument)
	require.Nil(t, l)
}

// A zero Expire is the default lease, for a lease as for Acquire; NoExpiry is refused.
func TestLeaseExpireZeroIsTheDefaultAndNoExpiryIsRefused(t *testing.T) {
	e := newEnv(t, nil)
	l, err := e.P.AcquireLease(ctx(t), []string{"k"}, provider.LeaseOptions{})
	require.NoError(t, err)
	require.Equal(t, int64(provider.DefaultLeaseExpire/time.Second), e.ttl("k"))
	_, err = l.Release(ctx(t))
	require.NoError(t, err)

	l, err = e.P.AcquireLease(ctx(t), []string{"k"}, provider.LeaseOptions{Expire: provider.NoExpiry})
	require.ErrorIs(t, err, provider.ErrInvalidArgument)
	require.Nil(t, l)
	e.RequireFree("k")
}

func TestAcquireLeaseTimesOut(t *testing.T) {
	e := newEnv(t, &provider.Options{MaximumRetryInterval: 20 * time.Millisecond})
	e.Set("b", "holder", 0)
	l, err := e.P.AcquireLease(ctx(t), []string{"a", "b"}, provider.LeaseOptions{Timeout: 100 * time.Millisecond})
	require.Nil(t, l)
	ce := conflict(t, err, provider.ErrTimedOut, timedOutMsg)
	require.Equal(t, []string{"a", "b"}, ce.Keys)
	e.RequireFree("a")
}

// The lease does not end with the context it was acquired with.
func TestLeaseOutlivesTheAcquireContext(t *testing.T) {
	e := newEnv(t, nil)
	c, cancel := context.WithCancel(ctx(t))
	l, err := e.P.AcquireLease(c, []string{"k"}, provider.LeaseOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = l.Release(context.Background()) })
	cancel()
	select {
	case <-l.Done():
		t.Fatal("the lease ended with its acquisition context")
	default:
	}
	ok, err := l.Release(c) // a cancelled context still releases
	require.NoError(t, err)
	require.True(t, ok)
	e.RequireFree("k")
}

func TestLostLeaseClosesDoneAndReleaseReportsFalse(t *testing.T) {
	noLeaks(t)
	e := newEnv(t, nil)
	l, err := e.P.AcquireLease(ctx(t), []string{"a", "b"}, provider.LeaseOptions{Expire: time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = l.Release(context.Background()) })
	e.Set("a", "thief", 0)

	awaitDone(t, l)
	conflict(t, l.Err(), provider.ErrLockLost, lostMsg(`"a"`))

	ok, err := l.Release(ctx(t))
	require.NoError(t, err)
	require.False(t, ok, "Release after a loss reports false")
	e.RequireOwner("a", "thief")
	e.RequireFree("b")
	conflict(t, l.Err(), provider.ErrLockLost, lostMsg(`"a"`))
}

func TestLostLeaseMessageNamesEveryLostKey(t *testing.T) {
	e := newEnv(t, nil)
	l, err := e.P.AcquireLease(ctx(t), []string{"x", "y", "z"}, provider.LeaseOptions{Expire: time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = l.Release(context.Background()) })
	e.RDB.Del(ctx(t), e.Key("x"), e.Key("z"))
	awaitDone(t, l)
	ce := conflict(t, l.Err(), provider.ErrLockLost, lostMsg(`"x", "z"`))
	require.Equal(t, []string{"x", "z"}, ce.Keys)
	_, _ = l.Release(ctx(t))
}

func TestConcurrentReleaseIsSafe(t *testing.T) {
	noLeaks(t)
	e := newEnv(t, nil)
	l, err := e.P.AcquireLease(ctx(t), []string{"k"}, provider.LeaseOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = l.Release(context.Background()) })
	var wg sync.WaitGroup
	results := make([]bool, 8)
	for i := range results {
		wg.Go(func() {
			ok, err := l.Release(context.Background())
			results[i] = ok && err == nil
		})
	}
	wg.Wait()
	for _, ok := range results {
		require.True(t, ok)
	}
	e.RequireFree("k")
}
