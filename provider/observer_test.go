package provider_test

import (
	"context"
	"testing"
	"time"

	"github.com/locktui/locktui/provider"
	"github.com/stretchr/testify/require"
)

type kinds = []provider.EventKind

const (
	waiting  = provider.EventWaiting
	acquired = provider.EventAcquired
	released = provider.EventReleased
	gaveUp   = provider.EventGaveUp
	renewed  = provider.EventRenewed
	lost     = provider.EventLost
)

func TestObserverSeesAcquireAndRelease(t *testing.T) {
	obs := &events{}
	e := newEnv(t, &provider.Options{Observer: obs})
	before := time.Now()
	require.NoError(t, e.P.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: "o"}))
	_, err := e.P.Release(ctx(t), []string{"k", "missing"}, "o")
	require.NoError(t, err)

	require.Equal(t, kinds{acquired, released}, obs.kinds("k"))
	require.Empty(t, obs.kinds("missing"), "nothing was released for a missing key")
	for _, ev := range obs.all {
		require.Equal(t, "o", ev.Owner)
		require.False(t, ev.Time.Before(before))
	}
}

func TestObserverSeesAConflict(t *testing.T) {
	obs := &events{}
	e := newEnv(t, &provider.Options{Observer: obs})
	e.Set("held", "x", 0)
	err := e.P.Acquire(ctx(t), []string{"free", "held"}, provider.AcquireOptions{Owner: "o"})
	require.ErrorIs(t, err, provider.ErrNotAcquired)
	require.Equal(t, kinds{gaveUp}, obs.kinds("held"))
	require.Empty(t, obs.kinds("free"), "a key rolled back was never reported acquired, nor released")
}

func TestObserverSeesAQueuedWait(t *testing.T) {
	obs := &events{}
	w := &waker{}
	e := newEnv(t, &provider.Options{Observer: obs, Waker: w})
	e.Set("k", "holder", 0)
	w.onWait = func(int) { e.RDB.Del(context.Background(), e.Key("k")) }
	require.NoError(t, e.P.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: "me", AwaitQueue: true}))
	require.Equal(t, kinds{waiting, acquired}, obs.kinds("k"))
	got := obs.of(acquired)[0]
	require.Greater(t, got.Wait, time.Duration(0))
	require.Equal(t, "me", got.Owner)
}

func TestObserverSeesATimeout(t *testing.T) {
	obs := &events{}
	e := newEnv(t, &provider.Options{Observer: obs, MaximumRetryInterval: 20 * time.Millisecond})
	e.Set("k", "holder", 0)
	err := e.P.Execute(ctx(t), []string{"k"}, func(context.Context) error { return nil }, provider.ExecuteOptions{Timeout: 50 * time.Millisecond})
	require.ErrorIs(t, err, provider.ErrTimedOut)
	require.Equal(t, kinds{waiting, gaveUp}, obs.kinds("k"))
	require.GreaterOrEqual(t, obs.of(gaveUp)[0].Wait, 50*time.Millisecond)
}

func TestObserverSeesALeaseLifecycle(t *testing.T) {
	obs := &events{}
	e := newEnv(t, &provider.Options{Observer: obs})
	var owner string
	require.NoError(t, e.P.Execute(ctx(t), []string{"k"}, func(context.Context) error {
		owner, _ = e.Owner("k")
		require.Eventually(t, func() bool { return len(obs.of(renewed)) > 0 }, wait, poll)
		return nil
	}, provider.ExecuteOptions{Expire: time.Second}))

	got := obs.kinds("k")
	require.Equal(t, kinds{acquired}, got[:1])
	require.Equal(t, released, got[len(got)-1])
	for _, k := range got[1 : len(got)-1] {
		require.Equal(t, renewed, k)
	}
	rel := obs.of(released)[0]
	require.Equal(t, owner, rel.Owner)
	require.Greater(t, rel.Held, time.Duration(0))
}

func TestObserverSeesALoss(t *testing.T) {
	obs := &events{}
	e := newEnv(t, &provider.Options{Observer: obs})
	l, err := e.P.AcquireLease(ctx(t), []string{"a", "b"}, provider.LeaseOptions{Expire: time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = l.Release(context.Background()) })
	e.Set("b", "thief", 0)
	awaitDone(t, l)
	ok, err := l.Release(ctx(t))
	require.NoError(t, err)
	require.False(t, ok)

	require.Equal(t, kinds{acquired, lost}, obs.kinds("b"))
	require.Equal(t, kinds{acquired, released}, obs.kinds("a"))
	require.Greater(t, obs.of(lost)[0].Held, time.Duration(0))
}

func TestObserverSeesReleaseAll(t *testing.T) {
	obs := &events{}
	e := newEnv(t, &provider.Options{Observer: obs})
	e.Set("a", "o", 0)
	e.Set("b", "x", 0)
	_, err := e.P.ReleaseAll(ctx(t), "o")
	require.NoError(t, err)
	require.Equal(t, kinds{released}, obs.kinds("a"))
	require.Empty(t, obs.kinds("b"))
}

func TestPanickingObserverDoesNotLoseLocks(t *testing.T) {
	e := newEnv(t, &provider.Options{
		Observer: provider.ObserverFunc(func(provider.Event) { panic("observer bug") }),
	})
	require.NoError(t, e.P.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: "o", Expire: 10 * time.Second}))
	e.RequireOwner("k", "o")
	ok, err := e.P.Release(ctx(t), []string{"k"}, "o")
	require.NoError(t, err)
	require.True(t, ok)
	e.RequireFree("k")
}

// A waiter woken by a same-provider release is told about after the release: observers (the
// console, the bridge's metrics) never see a key acquired by the next owner before it was
// released by the previous one.
func TestObserverSeesTheReleaseBeforeTheWokenAcquisition(t *testing.T) {
	obs := &events{}
	e := newEnv(t, &provider.Options{Observer: obs,
		DefaultRetryInterval: time.Minute, MaximumRetryInterval: time.Minute})
	for round := range 20 {
		require.NoError(t, e.P.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: "holder"}))
		done := make(chan error, 1)
		go func() {
			done <- e.P.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: "waiter", AwaitQueue: true})
		}()
		require.Eventually(t, func() bool { return len(obs.of(waiting)) == round+1 }, wait, poll)
		ok, err := e.P.Release(ctx(t), []string{"k"}, "holder")
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, <-done)
		ok, err = e.P.Release(ctx(t), []string{"k"}, "waiter")
		require.NoError(t, err)
		require.True(t, ok)
	}
	var order []string
	for _, ev := range obs.all {
		if ev.Kind == acquired || ev.Kind == released {
			order = append(order, string(ev.Kind)+":"+ev.Owner)
		}
	}
	want := make([]string, 0, 80)
	for range 20 {
		want = append(want, "acquired:holder", "released:holder", "acquired:waiter", "released:waiter")
	}
	require.Equal(t, want, order)
}

func TestMultiObserverPassesEveryEventToEachInOrder(t *testing.T) {
	var got []string
	record := func(name string) provider.Observer {
		return provider.ObserverFunc(func(e provider.Event) { got = append(got, name+":"+string(e.Kind)) })
	}
	obs := provider.MultiObserver(nil, record("a"), nil, record("b"))
	obs.LockEvent(provider.Event{Kind: lost})
	obs.LockEvent(provider.Event{Kind: renewed})
	require.Equal(t, []string{"a:lost", "b:lost", "a:renewed", "b:renewed"}, got)

	require.Nil(t, provider.MultiObserver(), "no observer")
	require.Nil(t, provider.MultiObserver(nil, nil), "nil observers are skipped")
	only := &events{}
	require.Same(t, only, provider.MultiObserver(nil, only), "a single observer is returned as it is")
}
