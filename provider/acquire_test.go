package provider_test

import (
	"context"
	"testing"
	"time"

	"github.com/locktui/locktui/internal/testsupport/locktest"
	"github.com/locktui/locktui/provider"
	"github.com/stretchr/testify/require"
)

func TestAcquireNoKeysIsANoOp(t *testing.T) {
	e := newEnv(t, nil)
	rec := record(e)
	require.NoError(t, e.P.Acquire(ctx(t), nil, provider.AcquireOptions{}))
	require.NoError(t, e.P.Acquire(ctx(t), []string{}, provider.AcquireOptions{AwaitQueue: true}))
	require.Empty(t, rec.of("acquire"))
}

// Stock fails (and leaks the lock) when "*" names a key twice; here keys are de-duplicated.
func TestAcquireDuplicateKeysWithDefaultOwner(t *testing.T) {
	e := newEnv(t, nil)
	for _, await := range []bool{false, true} {
		require.NoError(t, e.P.Acquire(ctx(t), []string{"k", "k"}, provider.AcquireOptions{AwaitQueue: await}))
		e.RequireOwner("k", "*")
		ok, err := e.P.Release(ctx(t), []string{"k", "k"}, "")
		require.NoError(t, err)
		require.True(t, ok)
		e.RequireFree("k")
	}
}

// Keys are taken in sorted order whatever the argument order; the error still names the first
// failing key in argument order, as stock does.
func TestAcquireOrderIsStable(t *testing.T) {
	e := newEnv(t, nil)
	rec := record(e)
	require.NoError(t, e.P.Acquire(ctx(t), []string{"c", "a", "b"}, provider.AcquireOptions{Owner: "o"}))
	var keys []string
	for _, c := range rec.of("acquire") {
		keys = append(keys, c.Key)
	}
	require.Equal(t, []string{e.Key("a"), e.Key("b"), e.Key("c")}, keys)
	_, _ = e.P.Release(ctx(t), []string{"a", "b", "c"}, "o")

	e.Set("b", "x", 0)
	e.Set("c", "y", 0)
	err := e.P.Acquire(ctx(t), []string{"c", "a", "b"}, provider.AcquireOptions{Owner: "o"})
	conflict(t, err, provider.ErrNotAcquired, notAcquiredMsg("c"))
	err = e.P.Acquire(ctx(t), []string{"a", "b", "c"}, provider.AcquireOptions{Owner: "o"})
	conflict(t, err, provider.ErrNotAcquired, notAcquiredMsg("b"))
	e.RequireFree("a")
}

func TestAcquireMultiKeyTakesEveryKey(t *testing.T) {
	e := newEnv(t, nil)
	require.NoError(t, e.P.Acquire(ctx(t), []string{"a", "b"}, provider.AcquireOptions{Owner: "o", Expire: 30 * time.Second}))
	for _, k := range []string{"a", "b"} {
		e.RequireOwner(k, "o")
		require.Equal(t, int64(30), e.ttl(k))
	}
	ok, err := e.P.Release(ctx(t), []string{"a", "b"}, "o")
	require.NoError(t, err)
	require.True(t, ok)
}

func TestAwaitQueueGetsTheKeyOnceReleased(t *testing.T) {
	w := &waker{}
	e := newEnv(t, &provider.Options{Waker: w})
	e.Set("k", "holder", 0)
	w.onWait = func(n int) {
		if n == 3 {
			ok, err := e.P.Release(context.Background(), []string{"k"}, "holder")
			if err != nil || !ok {
				panic("holder could not release")
			}
		}
	}
	require.NoError(t, e.P.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: "me", AwaitQueue: true, Expire: 5 * time.Second}))
	e.RequireOwner("k", "me")
	require.Equal(t, int64(5), e.ttl("k"))
	waits, keys := w.recorded()
	require.Len(t, waits, 3)
	require.Equal(t, []string{e.Key("k"), e.Key("k"), e.Key("k")}, keys, "the Waker is told the Redis key")
}

// A cancelled context ends the wait even when the backoff is an hour long, gives back the keys
// the call took, and the error matches both the conflict and context.Canceled.
func TestAwaitQueueCancelReturnsPromptlyAndGivesBack(t *testing.T) {
	waiting := make(chan struct{}, 1)
	obs := provider.ObserverFunc(func(ev provider.Event) {
		if ev.Kind == provider.EventWaiting {
			waiting <- struct{}{}
		}
	})
	e := newEnv(t, &provider.Options{DefaultRetryInterval: time.Hour, MaximumRetryInterval: time.Hour, Observer: obs})
	e.Set("b", "other", 0)
	c, cancel := context.WithCancel(ctx(t))
	done := make(chan error, 1)
	go func() {
		done <- e.P.Acquire(c, []string{"a", "b"}, provider.AcquireOptions{Owner: "me", AwaitQueue: true})
	}()
	<-waiting
	e.RequireOwner("a", "me")
	cancel()
	var err error
	select {
	case err = <-done:
	case <-time.After(wait):
		t.Fatal("Acquire did not return after its context was cancelled")
	}
	conflict(t, err, provider.ErrNotAcquired, notAcquiredMsg("b"))
	require.ErrorIs(t, err, context.Canceled)
	e.RequireFree("a")
	e.RequireOwner("b", "other")
}

func TestAcquireWithCancelledContext(t *testing.T) {
	e := newEnv(t, nil)
	c, cancel := context.WithCancel(ctx(t))
	cancel()
	for _, await := range []bool{false, true} {
		err := e.P.Acquire(c, []string{"a", "b"}, provider.AcquireOptions{Owner: "o", AwaitQueue: await})
		require.ErrorIs(t, err, context.Canceled)
		e.RequireFree("a")
		e.RequireFree("b")
	}
}

// J1/J2 and the cap: each wait is 50–100 % of the delay, the delay grows by BackoffFactor, is
// capped by MaximumRetryInterval, and is shared by all keys of one call.
func TestBackoffJitterGrowthAndCap(t *testing.T) {
	type bounds struct{ lo, hi time.Duration }
	ms := time.Millisecond
	cases := []struct {
		name string
		opts provider.Options
		want []bounds
	}{
		{"J1 one wait", provider.Options{DefaultRetryInterval: 100 * ms, BackoffFactor: 2},
			[]bounds{{50 * ms, 100 * ms}}},
		{"J2 two waits", provider.Options{DefaultRetryInterval: 100 * ms, BackoffFactor: 2},
			[]bounds{{50 * ms, 100 * ms}, {100 * ms, 200 * ms}}},
		{"factor 3", provider.Options{DefaultRetryInterval: 10 * ms, BackoffFactor: 3},
			[]bounds{{5 * ms, 10 * ms}, {15 * ms, 30 * ms}, {45 * ms, 90 * ms}}},
		{"capped", provider.Options{DefaultRetryInterval: 100 * ms, BackoffFactor: 2, MaximumRetryInterval: 150 * ms},
			[]bounds{{50 * ms, 100 * ms}, {75 * ms, 150 * ms}, {75 * ms, 150 * ms}, {75 * ms, 150 * ms}}},
		{"defaults", provider.Options{},
			[]bounds{{10 * ms, 20 * ms}, {20 * ms, 40 * ms}, {40 * ms, 80 * ms}, {80 * ms, 160 * ms}, {160 * ms, 320 * ms},
				{320 * ms, 640 * ms}, {500 * ms, 1000 * ms}, {500 * ms, 1000 * ms}}},
		{"first wait uncapped", provider.Options{DefaultRetryInterval: 400 * ms, MaximumRetryInterval: 100 * ms},
			[]bounds{{200 * ms, 400 * ms}, {50 * ms, 100 * ms}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, nil)
			jittered := false
			for range 20 { // jitter is random: check many draws
				w := &waker{}
				opts := c.opts
				opts.Waker, opts.Namespace = w, e.NS
				p := locktest.NewProvider(t, e.PC, &opts)
				e.Set("k", "holder", 0)
				w.onWait = func(n int) {
					if n == len(c.want) {
						e.RDB.Del(context.Background(), e.Key("k"))
					}
				}
				require.NoError(t, p.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: "me", AwaitQueue: true}))
				e.RDB.Del(context.Background(), e.Key("k"))
				waits, _ := w.recorded()
				require.Len(t, waits, len(c.want))
				for i, b := range c.want {
					require.GreaterOrEqual(t, waits[i], b.lo, "wait %d", i+1)
					require.LessOrEqual(t, waits[i], b.hi, "wait %d", i+1)
					jittered = jittered || waits[i] < b.hi
				}
			}
			require.True(t, jittered, "every wait was the full delay: no jitter")
		})
	}
}

// The delay is one variable per call: a second blocked key continues the first key's backoff.
func TestBackoffIsSharedByTheKeysOfOneCall(t *testing.T) {
	w := &waker{}
	e := newEnv(t, &provider.Options{Waker: w, DefaultRetryInterval: 100 * time.Millisecond})
	e.Set("a", "holder", 0)
	e.Set("b", "holder", 0)
	w.onWait = func(n int) {
		e.RDB.Del(context.Background(), e.Key([]string{"a", "b"}[n-1]))
	}
	require.NoError(t, e.P.Acquire(ctx(t), []string{"a", "b"}, provider.AcquireOptions{Owner: "me", AwaitQueue: true}))
	waits, keys := w.recorded()
	require.Equal(t, []string{e.Key("a"), e.Key("b")}, keys)
	require.GreaterOrEqual(t, waits[1], 100*time.Millisecond)
	require.LessOrEqual(t, waits[1], 200*time.Millisecond)
}
