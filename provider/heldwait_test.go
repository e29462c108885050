package provider_test

// A call that waits holds the keys before the one it waits for (sorted order): those keys must
// stay its own until it returns.

import (
	"context"
	"testing"
	"time"

	"github.com/locktui/locktui/provider"
	"github.com/stretchr/testify/require"
)

// waitingOn returns an Observer that reports on the returned channel every key a call starts
// waiting for.
func waitingOn() (provider.Observer, <-chan string) {
	ch := make(chan string, 64)
	return provider.ObserverFunc(func(ev provider.Event) {
		if ev.Kind == provider.EventWaiting {
			ch <- ev.Key
		}
	}), ch
}

// awaitWaitingOn blocks until a call starts waiting for key.
func awaitWaitingOn(t *testing.T, ch <-chan string, key string) {
	t.Helper()
	for {
		select {
		case got := <-ch:
			if got == key {
				return
			}
		case <-time.After(wait):
			t.Fatalf("no call started waiting for %q", key)
		}
	}
}

// A key the call held while it waited for a later one is taken by someone else (it expired, or
// was force-released) before the wait ends: the call does not report success. It gives back
// what it holds, waits for the stolen key, and succeeds only once every key is its own.
func TestWaitingCallDoesNotSucceedWithAStolenKey(t *testing.T) {
	calls := []struct {
		name string
		// take takes a and b and returns the function that releases them.
		take func(p *provider.Provider, c context.Context) (release func(), err error)
	}{
		{"lease", func(p *provider.Provider, c context.Context) (func(), error) {
			l, err := p.AcquireLease(c, []string{"a", "b"}, provider.LeaseOptions{Timeout: wait})
			if err != nil {
				return nil, err
			}
			return func() { _, _ = l.Release(context.Background()) }, l.Err()
		}},
		{"acquire queued", func(p *provider.Provider, c context.Context) (func(), error) {
			err := p.Acquire(c, []string{"a", "b"}, provider.AcquireOptions{Owner: "me", Expire: time.Minute, AwaitQueue: true})
			return func() { _, _ = p.Release(context.Background(), []string{"a", "b"}, "me") }, err
		}},
	}
	for _, tc := range calls {
		t.Run(tc.name, func(t *testing.T) {
			noLeaks(t)
			obs, waits := waitingOn()
			e := newEnv(t, &provider.Options{Observer: obs, MaximumRetryInterval: 20 * time.Millisecond})
			rec := record(e)
			e.Set("b", "holder", 0)
			type result struct {
				err  error
				a, b string // the keys' owners when the call returned
			}
			done := make(chan result, 1)
			go func() {
				release, err := tc.take(e.P, ctx(t))
				a, _ := e.Owner("a")
				b, _ := e.Owner("b")
				if release != nil {
					release()
				}
				done <- result{err, a, b}
			}()
			awaitWaitingOn(t, waits, "b")
			e.Set("a", "thief", 0)
			require.NoError(t, e.RDB.Del(ctx(t), e.Key("b")).Err())

			for waitingForA := false; !waitingForA; {
				select {
				case r := <-done:
					t.Fatalf("the call returned (error %v) holding a=%q b=%q: a was the thief's", r.err, r.a, r.b)
				case k := <-waits:
					waitingForA = k == "a"
				case <-time.After(wait):
					t.Fatal("the call neither returned nor waited for a")
				}
			}
			e.RequireOwner("a", "thief")
			e.RequireFree("b") // given back: while it waits, a call holds a sorted prefix only

			require.NoError(t, e.RDB.Del(ctx(t), e.Key("a")).Err())
			r := <-done
			require.NoError(t, r.err)
			owner := rec.of("acquire")[0].Args[0]
			require.Equal(t, []string{owner, owner}, []string{r.a, r.b}, "every key is the call's own when it returns")
			require.NotEmpty(t, rec.of("extend"), "the held keys were confirmed before success")
		})
	}
}

// A call that waits longer than its TTL keeps the keys it already holds alive: it extends them
// (owner-checked) every TTL/3, so they cannot expire and be taken meanwhile.
func TestWaitingCallKeepsItsHeldKeysAlive(t *testing.T) {
	noLeaks(t)
	e := newEnv(t, &provider.Options{MaximumRetryInterval: 50 * time.Millisecond})
	rec := record(e)
	e.Set("b", "holder", 0)
	done := make(chan error, 1)
	var lease *provider.Lease
	go func() {
		var err error
		lease, err = e.P.AcquireLease(ctx(t), []string{"a", "b"}, provider.LeaseOptions{Expire: time.Second, Timeout: wait})
		done <- err
	}()
	// Four refreshes, TTL/3 apart: a has outlived the TTL it was taken with.
	require.Eventually(t, func() bool { return len(rec.of("extend")) >= 4 }, wait, poll)
	first := rec.of("acquire")[0]
	require.Greater(t, time.Since(first.At), time.Second)
	e.RequireOwner("a", first.Args[0])
	for _, c := range rec.of("extend") {
		require.Equal(t, e.Key("a"), c.Key, "only the held prefix is extended")
		require.Equal(t, []string{first.Args[0], "1"}, c.Args[:2], "stock's arguments, then the claim")
	}

	require.NoError(t, e.RDB.Del(ctx(t), e.Key("b")).Err())
	require.NoError(t, <-done)
	require.NoError(t, lease.Err())
	e.RequireOwner("a", lease.Owner())
	e.RequireOwner("b", lease.Owner())
	ok, err := lease.Release(ctx(t))
	require.NoError(t, err)
	require.True(t, ok)
}

// Without a wait, taking every key stays one round trip: nothing is confirmed or extended.
func TestUncontendedLeaseIsOneRoundTrip(t *testing.T) {
	e := newEnv(t, nil)
	rec := record(e)
	l, err := e.P.AcquireLease(ctx(t), []string{"a", "b", "c"}, provider.LeaseOptions{})
	require.NoError(t, err)
	require.Len(t, rec.of("acquire"), 3)
	require.Empty(t, rec.of("extend"))
	ok, err := l.Release(ctx(t))
	require.NoError(t, err)
	require.True(t, ok)
}

// A call that waited for its only key has nothing to confirm: the attempt that took the key
// set its full TTL, so no extend follows (one round trip less per contended hand-off).
func TestWaitHoldingNothingIsNotConfirmed(t *testing.T) {
	obs, waits := waitingOn()
	e := newEnv(t, &provider.Options{Observer: obs, MaximumRetryInterval: 20 * time.Millisecond})
	rec := record(e)
	e.Set("k", "holder", 0)
	done := make(chan error, 1)
	go func() {
		done <- e.P.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: "me", Expire: 10 * time.Second, AwaitQueue: true})
	}()
	awaitWaitingOn(t, waits, "k")
	require.NoError(t, e.RDB.Del(ctx(t), e.Key("k")).Err())
	require.NoError(t, <-done)
	e.RequireOwner("k", "me")
	require.Equal(t, int64(10), e.ttl("k"), "the taking attempt set the full TTL")
	require.Empty(t, rec.of("extend"), "nothing was held during the wait: nothing to confirm")
}
