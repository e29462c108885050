package provider_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/testsupport/locktest"
	"github.com/locktui/locktui/provider"
)

// A release is announced on FreeChannel only while a waiter of ours is marked on the key: the
// release of a key nobody waits for publishes nothing, the release of a key that a waiting call
// found held does. Pub/sub keeps the order of the PUBLISHes, so the first message heard is the
// second release's only when the first sent none.
func TestReleaseIsAnnouncedOnlyWhenAWaiterIsMarked(t *testing.T) {
	noLeaks(t)
	obs, waiting := waitSignal()
	e := newEnv(t, slowOpts(obs, false))
	sub := e.Srv.Client(t).Subscribe(ctx(t), provider.FreeChannel(e.NS))
	t.Cleanup(func() { _ = sub.Close() })
	_, err := sub.Receive(ctx(t)) // the subscription's confirmation
	require.NoError(t, err)
	other := locktest.NewProvider(t, e.Srv.Client(t), &provider.Options{Namespace: e.NS})
	for _, k := range []string{"alone", "waited"} {
		require.NoError(t, other.Acquire(ctx(t), []string{k}, provider.AcquireOptions{Owner: "holder"}))
	}
	ok, err := other.Release(ctx(t), []string{"alone"}, "holder")
	require.NoError(t, err)
	require.True(t, ok)

	done := goAcquire(t, e.P, []string{"waited"}, "me")
	awaitWaiting(t, waiting, "me")
	left, err := e.RDB.PTTL(ctx(t), provider.WaitersKey(e.Key("waited"))).Result()
	require.NoError(t, err)
	require.Greater(t, left, slowBackoff, "the marker outlives the waiter's longest sleep")
	ok, err = other.Release(ctx(t), []string{"waited"}, "holder")
	require.NoError(t, err)
	require.True(t, ok)
	msg, err := sub.ReceiveMessage(ctx(t))
	require.NoError(t, err)
	require.Equal(t, "\n"+e.Key("waited"), msg.Payload, "the first announcement is the waited key's")
	require.NoError(t, result(t, done, "the waiter"))
	e.RequireOwner("waited", "me")
}

// A waiter whose Provider sleeps for less never shortens the marker that a waiter with a longer
// backoff left: that one would otherwise sleep unannounced.
func TestWaiterMarkerIsNeverShortened(t *testing.T) {
	noLeaks(t)
	obs, waiting := waitSignal()
	e := newEnv(t, slowOpts(obs, false))
	polled, stop := make(chan struct{}), make(chan struct{})
	quick := locktest.NewProvider(t, e.Srv.Client(t), &provider.Options{Namespace: e.NS, MaximumRetryInterval: 10 * time.Millisecond,
		Waker: &waker{onWait: func(n int) {
			if n == 2 { // two attempts found the key held
				close(polled)
			}
			if n >= 2 {
				<-stop
			}
		}}})
	require.NoError(t, e.P.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: "holder"}))
	slowDone := goAcquire(t, e.P, []string{"k"}, "slow")
	awaitWaiting(t, waiting, "slow")
	goAcquire(t, quick, []string{"k"}, "quick")
	t.Cleanup(func() { close(stop) }) // before goAcquire's clean-up waits for the quick call
	select {
	case <-polled:
	case <-time.After(wait):
		t.Fatal("the quick waiter did not retry")
	}
	left, err := e.RDB.PTTL(ctx(t), provider.WaitersKey(e.Key("k"))).Result()
	require.NoError(t, err)
	require.Greater(t, left, slowBackoff, "the slow waiter's marker is kept")
	ok, err := e.P.Release(ctx(t), []string{"k"}, "holder")
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, result(t, slowDone, "the slow waiter"))
	e.RequireOwner("k", "slow")
}
