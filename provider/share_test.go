package provider_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/testsupport/locktest"
	"github.com/locktui/locktui/provider"
)

// shareRecord returns the share record of lock k (empty when it does not exist).
func (e *env) shareRecord(k string) map[string]string {
	e.T.Helper()
	rec, err := e.RDB.HGetAll(ctx(e.T), provider.ShareKey(e.Key(k))).Result()
	require.NoError(e.T, err)
	return rec
}

// seeContention makes e.P find k held once (by a process that writes no holder record), so that
// its attempts on k read the share record for the next shareMemory; k is free again after it.
func (e *env) seeContention(k string) {
	e.T.Helper()
	e.Set(k, "stock-owner", time.Minute)
	err := e.P.Acquire(ctx(e.T), []string{k}, provider.AcquireOptions{Owner: "probe"})
	require.ErrorIs(e.T, err, provider.ErrNotAcquired)
	require.NoError(e.T, e.RDB.Del(ctx(e.T), e.Key(k)).Err())
}

// Among our own clients nothing is shared: no share record is ever written, and a released
// lock is free for the next of ours at once.
func TestNoShareRecordWithoutForeignHolders(t *testing.T) {
	e := newEnv(t, nil)
	other := locktest.NewProvider(t, e.PC, &provider.Options{Namespace: e.NS})
	for i := range 20 {
		p := []*provider.Provider{e.P, other}[i%2]
		require.NoError(t, p.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: "o", AwaitQueue: true}))
		ok, err := p.Release(ctx(t), []string{"k"}, "o")
		require.NoError(t, err)
		require.True(t, ok)
	}
	require.Empty(t, e.shareRecord("k"))
}

// A process that writes no holder record (stock Medusa) and contends for a lock gets turns:
// once our clients have held it for a run, the release that frees it leaves it to the others
// for a window, in which our waiting acquisitions find it "held" while a plain SET NX takes it
// (and a try-once acquisition takes it, as stock's would).
func TestForeignContenderGetsATurnAfterOurRun(t *testing.T) {
	obs, waits := waitingOn()
	e := newEnv(t, &provider.Options{Observer: obs, MaximumRetryInterval: 20 * time.Millisecond})
	e.Set("k", "stock-owner", 0) // a stock process holds it
	done := make(chan error, 1)
	go func() {
		done <- e.P.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: "ours", AwaitQueue: true})
	}()
	awaitWaitingOn(t, waits, "k")
	require.Contains(t, e.shareRecord("k"), "seen", "our waiter saw a holder that writes no record")
	require.NoError(t, e.RDB.Del(ctx(t), e.Key("k")).Err()) // stock releases
	require.NoError(t, <-done)
	require.Contains(t, e.shareRecord("k"), "since", "taking it began our run")

	// A release before the run is over keeps the lock ours to hand on.
	ok, err := e.P.Release(ctx(t), []string{"k"}, "ours")
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, e.P.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: "ours"}))

	// The run is over (as if it had begun a second ago): the release leaves the lock to others.
	share := provider.ShareKey(e.Key("k"))
	require.NoError(t, e.RDB.HSet(ctx(t), share, "since", time.Now().Add(-time.Second).UnixMilli()).Err())
	ok, err = e.P.Release(ctx(t), []string{"k"}, "ours")
	require.NoError(t, err)
	require.True(t, ok)
	yield, err := e.RDB.HGet(ctx(t), share, "yield").Int64()
	require.NoError(t, err, "the release opened the others' turn")
	require.Greater(t, yield, time.Now().UnixMilli())

	// In the turn (made long here, so that a slow machine cannot end it during the checks):
	require.NoError(t, e.RDB.HSet(ctx(t), share, "yield", time.Now().Add(time.Minute).UnixMilli()).Err())
	short, cancel := context.WithTimeout(ctx(t), 100*time.Millisecond)
	defer cancel()
	err = e.P.Acquire(short, []string{"k"}, provider.AcquireOptions{Owner: "ours", AwaitQueue: true})
	require.ErrorIs(t, err, provider.ErrNotAcquired, "a waiting call leaves the free lock to the others")
	e.RequireFree("k")
	require.NoError(t, e.P.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: "try-once"}),
		"a try-once acquisition takes a free key, as stock's does")
	ok, err = e.P.Release(ctx(t), []string{"k"}, "try-once")
	require.NoError(t, err)
	require.True(t, ok)
	taken, err := e.RDB.SetNX(ctx(t), e.Key("k"), "stock-owner", 0).Result()
	require.NoError(t, err)
	require.True(t, taken, "a stock process takes it in its turn")
}

// A waiter that finds the lock left to others tries again when the window ends, not after its
// backoff: nobody else took the lock, so it is ours then.
func TestWaiterTakesAnUnusedTurnWhenItEnds(t *testing.T) {
	obs, waits := waitingOn()
	e := newEnv(t, &provider.Options{Observer: obs, DefaultRetryInterval: time.Minute, MaximumRetryInterval: time.Minute})
	e.seeContention("k")
	require.NoError(t, e.RDB.HSet(ctx(t), provider.ShareKey(e.Key("k")), "seen", 1,
		"yield", time.Now().Add(100*time.Millisecond).UnixMilli()).Err())
	done := make(chan error, 1)
	go func() {
		done <- e.P.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: "ours", AwaitQueue: true})
	}()
	awaitWaitingOn(t, waits, "k")
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(wait):
		t.Fatal("the waiter slept out its one-minute backoff instead of the window")
	}
	e.RequireOwner("k", "ours")
}

// Once a stock holder's run has lasted its turn, a waiter of ours polls fast, not with its
// backoff, so it finds the key free between a stock worker's release and its re-take (here a
// delete that nobody announces).
func TestStockHolderPastItsTurnIsPolledFast(t *testing.T) {
	obs, waits := waitingOn()
	e := newEnv(t, &provider.Options{Observer: obs, DefaultRetryInterval: time.Minute, MaximumRetryInterval: time.Minute})
	e.Set("k", "stock-owner", 0)
	require.NoError(t, e.RDB.HSet(ctx(t), provider.ShareKey(e.Key("k")), "seen", 1,
		"theirs", time.Now().Add(-time.Second).UnixMilli()).Err())
	done := make(chan error, 2)
	for _, owner := range []string{"ours-1", "ours-2"} {
		go func() {
			done <- e.P.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: owner, AwaitQueue: true})
		}()
		awaitWaitingOn(t, waits, "k")
	}
	require.NoError(t, e.RDB.Del(ctx(t), e.Key("k")).Err())
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(wait):
		t.Fatal("no waiter took the free key: they slept out their one-minute backoff")
	}
	owner, _ := e.Owner("k")
	require.Contains(t, []string{"ours-1", "ours-2"}, owner)
	ok, err := e.P.Release(ctx(t), []string{"k"}, owner)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, <-done, "the other waiter is woken by our release")
}

// A stock process that took the lock again under an owner shared with ours ("*" here), after
// its release left our earlier hold's record behind, is seen as stock's all the same: the record
// does not have the lock's expiry, so our waiter starts the share record that gives stock its
// turns (found in review: only the record's owner was compared).
func TestAStockHoldBesideOurStaleRecordIsSeenAsStocks(t *testing.T) {
	obs, waits := waitingOn()
	e := newEnv(t, &provider.Options{Observer: obs, MaximumRetryInterval: 20 * time.Millisecond})
	require.NoError(t, e.P.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Expire: time.Minute}))
	require.NoError(t, e.RDB.Del(ctx(t), e.Key("k")).Err()) // stock's release: the record stays
	e.StockTake("k", provider.DefaultOwner, 30)
	done := make(chan error, 1)
	go func() {
		done <- e.P.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: "ours", AwaitQueue: true})
	}()
	awaitWaitingOn(t, waits, "k")
	require.Contains(t, e.shareRecord("k"), "seen", "our waiter saw a holder that is not ours")
	require.NoError(t, e.RDB.Del(ctx(t), e.Key("k")).Err())
	require.NoError(t, <-done)
}
