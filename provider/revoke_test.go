package provider_test

// Force-release tells the holder first (docs/safety.md, "Force-release"), and holders hear what
// happens to their keys (hear.go). Each test has a holder and a waiter, each with a Provider of
// its own, and an operator (an operator.Inspector: env.Ops), as three processes would; times are
// taken on this process's monotonic clock. The force-release's own outcomes are tested in
// package operator.

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/testsupport/locktest"
	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
)

// told waits until l ends and returns when it did (a failing test after wait).
func told(t *testing.T, l *provider.Lease) time.Time {
	t.Helper()
	select {
	case <-l.Done():
		return time.Now()
	case <-time.After(wait):
		t.Fatal("the holder was never told")
		return time.Time{}
	}
}

// waiter starts a lease on key from p that waits up to timeout, and returns a channel with the
// time it was granted (or the zero time and the error).
func waiter(t *testing.T, p *provider.Provider, key string, timeout time.Duration) <-chan granted {
	out := make(chan granted, 1)
	go func() {
		l, err := p.AcquireLease(context.Background(), []string{key}, provider.LeaseOptions{Timeout: timeout, Expire: 30 * time.Second})
		g := granted{at: time.Now(), err: err}
		if err == nil {
			_, _ = l.Release(context.Background())
		}
		out <- g
	}()
	return out
}

type granted struct {
	at  time.Time
	err error
}

// A force-release of a live lease tells its holder first: the holder's lease ends at once (not
// at its next renewal, 10 s away), the key stays held until the holder releases it, and only
// then does the waiter get it. Before, the key was deleted at once: the waiter entered within
// milliseconds and the holder learned at its next renewal.
func TestForceReleaseTellsALiveLeaseFirst(t *testing.T) {
	e := newEnv(t, nil)
	other := func() *provider.Provider {
		p := locktest.NewProvider(t, e.PC, &provider.Options{Namespace: e.NS})
		t.Cleanup(p.Close)
		return p
	}
	holderP, waiterP := e.P, other()
	c := ctx(t)
	lease, err := holderP.AcquireLease(c, []string{"k"}, provider.LeaseOptions{Expire: 30 * time.Second})
	require.NoError(t, err)
	obs := waiter(t, waiterP, "k", wait)
	awaitHearing(t, holderP, lease)

	seen, ok, err := e.Ops.Get(c, "k")
	require.NoError(t, err)
	require.True(t, ok)
	require.Empty(t, operator.CannotBeTold(seen), "a live lease can be told")
	how, err := e.Ops.ForceReleaseHold(c, seen, operator.TellHolderFirst)
	require.NoError(t, err)
	require.Equal(t, operator.HolderTold, how)

	toldAt := told(t, lease)
	require.ErrorIs(t, lease.Err(), provider.ErrRevoked)
	require.Contains(t, lease.Err().Error(), "force-released")
	e.RequireOwner("k", lease.Owner()) // still held: the holder has not released it
	select {
	case g := <-obs:
		t.Fatalf("the waiter got the key (at %v, err %v) before the holder released it", g.at, g.err)
	default:
	}
	releasedAt := time.Now()
	_, err = lease.Release(c)
	require.NoError(t, err)
	g := <-obs
	require.NoError(t, g.err)
	require.True(t, g.at.After(releasedAt), "the waiter entered after the holder released the key")
	require.True(t, toldAt.Before(releasedAt))
}

// A holder that is told but never releases (a process hung in its job) keeps the key from
// everyone else until its TTL runs out, which is after its own deadline: its renewals fail
// from the revocation on.
func TestAToldHolderThatNeverReleasesKeepsTheKeyUntilItsDeadline(t *testing.T) {
	e := newEnv(t, nil)
	waiterP := locktest.NewProvider(t, e.PC, &provider.Options{Namespace: e.NS})
	t.Cleanup(waiterP.Close)
	c := ctx(t)
	lease, err := e.P.AcquireLease(c, []string{"k"}, provider.LeaseOptions{Expire: 2 * time.Second})
	require.NoError(t, err)
	how, err := e.Ops.ForceReleaseOwner(c, "k", lease.Owner(), operator.TellHolderFirst)
	require.NoError(t, err)
	require.Equal(t, operator.HolderTold, how)
	told(t, lease)
	deadline := lease.Deadline()
	g := <-waiter(t, waiterP, "k", wait)
	require.NoError(t, g.err)
	require.False(t, g.at.Before(deadline), "the waiter entered at %v, before the told holder's deadline %v", g.at, deadline)
}

// A holder that hears nothing (its Provider's listener is closed) is told at its next renewal,
// which fails for a revoked hold instead of extending it.
func TestAHolderThatHearsNothingIsToldAtItsNextRenewal(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	deaf := locktest.NewProvider(t, e.PC, &provider.Options{Namespace: e.NS})
	deaf.Close() // no listener: renewals alone tell it
	lease, err := deaf.AcquireLease(c, []string{"k"}, provider.LeaseOptions{Expire: time.Second})
	require.NoError(t, err)
	how, err := e.Ops.ForceReleaseOwner(c, "k", lease.Owner(), operator.TellHolderFirst)
	require.NoError(t, err)
	require.Equal(t, operator.HolderTold, how)
	told(t, lease)
	require.ErrorIs(t, lease.Err(), provider.ErrRevoked)
	require.Contains(t, provider.LossReason(lease.Err()), "force-released")
}

// FreeNow frees a live lease at once (package operator tests the outcome), and its holder hears
// of the delete at once (it renews, finds the key gone and ends the lease) instead of at its next
// renewal.
func TestAFreedLeaseHearsItAtOnce(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	lease, err := e.P.AcquireLease(c, []string{"lease"}, provider.LeaseOptions{Expire: 30 * time.Second})
	require.NoError(t, err)
	awaitHearing(t, e.P, lease)
	how, err := e.Ops.ForceReleaseOwner(c, "lease", lease.Owner(), operator.FreeNow)
	require.NoError(t, err)
	require.Equal(t, operator.Freed, how)
	told(t, lease)
	require.Contains(t, lease.Err().Error(), "reported the key freed", "heard, not found at a renewal 10 s later")
}

// A holder hears a delete by hand of its key through keyspace notifications and ends its lease
// at once, not at its next renewal.
func TestAHolderHearsItsKeyDeletedByHand(t *testing.T) {
	srv := redistest.Start(t)
	e := newEnvOn(t, srv, nil)
	c := ctx(t)
	require.NoError(t, e.RDB.ConfigSet(c, "notify-keyspace-events", "Kgx").Err())
	lease, err := e.P.AcquireLease(c, []string{"k"}, provider.LeaseOptions{Expire: 30 * time.Second})
	require.NoError(t, err)
	awaitHearing(t, e.P, lease)
	require.NoError(t, e.RDB.Del(c, e.Key("k")).Err())
	told(t, lease)
	require.Contains(t, lease.Err().Error(), "reported the key del")
}

// A message about an earlier holder's release, heard after this lease took the key (here one
// published by hand), does not end the lease: the check it makes finds the key still the
// lease's, and renews nothing.
func TestAStaleFreeMessageDoesNotEndALease(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	lease, err := e.P.AcquireLease(c, []string{"k"}, provider.LeaseOptions{Expire: 30 * time.Second})
	require.NoError(t, err)
	awaitHearing(t, e.P, lease)
	before := provider.ChecksRun(lease)
	deadline := lease.Deadline()
	require.NoError(t, e.RDB.Publish(c, provider.FreeChannel(e.NS), "\n"+e.Key("k")).Err())
	require.Eventually(t, func() bool { return provider.ChecksRun(lease) > before }, wait, time.Millisecond,
		"the lease checks its key on hearing of a release of it")
	require.NoError(t, lease.Err())
	require.Equal(t, deadline, lease.Deadline(), "a check renews nothing")
	ok, err := lease.Release(c)
	require.NoError(t, err)
	require.True(t, ok)
}

// An operator's release of an owner's locks (ReleaseAllWith, TellHolderFirst: the console's D,
// release-all) tells the live leases among them first and frees the others at once; stock's
// ReleaseAll frees them all at once, and the lease's holder hears of it at once.
func TestReleasingAnOwnersLocksTellsItsLeasesFirst(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	const owner = "svc"
	lease := e.HoldPlainAndLease(c, owner)
	awaitHearing(t, e.P, lease)
	e.RequireReleaseAllTellsTheLease(c, owner)
	told(t, lease)
	require.ErrorIs(t, lease.Err(), provider.ErrRevoked)
	e.RequireOwner("leased", owner) // until its holder releases it
	_, err := lease.Release(c)
	require.NoError(t, err)
	e.RequireFree("leased")

	again, err := e.P.AcquireLease(c, []string{"leased"}, provider.LeaseOptions{Owner: owner, Expire: 30 * time.Second})
	require.NoError(t, err)
	n, err := e.P.ReleaseAll(c, owner)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	e.RequireFree("leased")
	told(t, again)
	require.Contains(t, again.Err().Error(), "reported the key freed")
}

// Found in review. A revoked hold cannot be joined: a re-entry by the same owner (another
// worker of the service) is refused instead of writing a record without the revocation, and
// the holder that heard nothing is told at its next renewal, whichever claim renews.
func TestARevokedHoldCannotBeJoined(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	deaf := locktest.NewProvider(t, e.PC, &provider.Options{Namespace: e.NS})
	deaf.Close() // hears nothing: renewals alone tell it
	lease, err := deaf.AcquireLease(c, []string{"k"}, provider.LeaseOptions{Owner: "svc", Expire: time.Second})
	require.NoError(t, err)
	how, err := e.Ops.ForceReleaseOwner(c, "k", "svc", operator.TellHolderFirst)
	require.NoError(t, err)
	require.Equal(t, operator.HolderTold, how)
	err = e.P.Acquire(c, []string{"k"}, provider.AcquireOptions{Owner: "svc", Expire: time.Second})
	require.ErrorIs(t, err, provider.ErrNotAcquired, "the same owner does not re-enter a revoked hold")
	require.False(t, e.Seen("k").Record.RevokedAt.IsZero(), "the revocation stays")
	told(t, lease)
	require.ErrorIs(t, lease.Err(), provider.ErrRevoked)
}

// Found in review. A lease whose renewals fail for a while still believes until its own
// deadline: a force-release in tell mode tells it (the key stays) instead of freeing the key as
// if the holder had stopped.
func TestALeaseThatMissedRenewalsIsToldNotFreed(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	rec := record(e)
	lease, err := e.P.AcquireLease(c, []string{"k"}, provider.LeaseOptions{Expire: 3 * time.Second})
	require.NoError(t, err)
	rec.setFail(func(_ context.Context, sc scriptCall) error {
		if sc.Script == "extend" {
			return errors.New("dial tcp: i/o timeout (a partition)")
		}
		return nil
	})
	// Two renewal intervals without a renewal: the lock has under a third of its TTL left, the
	// holder's deadline (at 2.7 s) is still ahead.
	require.Eventually(t, func() bool { return e.RDB.PTTL(c, e.Key("k")).Val() < 900*time.Millisecond }, wait, time.Millisecond)
	require.NoError(t, lease.Err(), "the holder still believes")
	how, err := e.Ops.ForceReleaseOwner(c, "k", lease.Owner(), operator.TellHolderFirst)
	require.NoError(t, err)
	require.Equal(t, operator.HolderTold, how)
	e.RequireOwner("k", lease.Owner())
}

// Found in review. A check asked for just as the renewal timer fires waits for that renewal:
// renewals and checks never overlap (before, a second timer callback ran beside the first).
func TestACheckRacingTheRenewalTimerWaitsForIt(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	rec := record(e)
	var inflight, most atomic.Int64
	rec.setFail(func(_ context.Context, sc scriptCall) error {
		if sc.Script == "extend" {
			n := inflight.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(50 * time.Millisecond) // a slow round trip, for another to overlap
		}
		return nil
	})
	rec.setAfter(func(_ context.Context, sc scriptCall) error {
		if sc.Script == "extend" {
			inflight.Add(-1)
		}
		return nil
	})
	lease, err := e.P.AcquireLease(c, []string{"k"}, provider.LeaseOptions{Expire: 30 * time.Second})
	require.NoError(t, err)
	awaitHearing(t, e.P, lease)
	inflight.Store(0)
	most.Store(0)
	before := provider.ChecksRun(lease)
	provider.CheckSoonAsRenewalFires(lease)
	require.Eventually(t, func() bool { return provider.ChecksRun(lease) > before }, wait, time.Millisecond,
		"the check asked for runs after the renewal")
	require.LessOrEqual(t, most.Load(), int64(1), "renewals and checks never overlap")
	require.NoError(t, lease.Err())
	_, err = lease.Release(c)
	require.NoError(t, err)
}

// Found in review. A lease revoked while it waits for its next key is not granted: the call
// fails and gives back what it took.
func TestALeaseRevokedWhileItWaitsIsNotGranted(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	other := locktest.NewProvider(t, e.RDB, &provider.Options{Namespace: e.NS})
	require.NoError(t, other.Acquire(c, []string{"b"}, provider.AcquireOptions{Owner: "x", Expire: time.Minute}))
	type result struct {
		l   *provider.Lease
		err error
	}
	out := make(chan result, 1)
	go func() {
		l, err := e.P.AcquireLease(c, []string{"a", "b"}, provider.LeaseOptions{Owner: "svc", Expire: 30 * time.Second, Timeout: wait})
		out <- result{l, err}
	}()
	require.Eventually(t, func() bool { o, ok := e.Owner("a"); return ok && o == "svc" }, wait, time.Millisecond)
	how, err := e.Ops.ForceReleaseOwner(c, "a", "svc", operator.TellHolderFirst)
	require.NoError(t, err)
	require.Equal(t, operator.HolderTold, how)
	_, err = other.Release(c, []string{"b"}, "x")
	require.NoError(t, err)
	r := <-out
	require.ErrorIs(t, r.err, provider.ErrRevoked)
	e.RequireFree("a")
	e.RequireFree("b")
}

// A key deleted under its holder (by hand here; an eviction is heard the same way, as
// "evicted") cannot be told first: the holder and the waiters hear it at the same moment, and
// each needs a round trip (the holder's check, the waiter's attempt). The holder ends its lease
// within the 50 ms of clock slack of the waiter's entry (measured: 0.2–0.7 ms after it).
// Before, the holder learned at its next renewal, 10 s later.
func TestADeletedKeysHolderIsToldAsAWaiterEnters(t *testing.T) {
	srv := redistest.Start(t)
	e := newEnvOn(t, srv, nil)
	c := ctx(t)
	require.NoError(t, e.RDB.ConfigSet(c, "notify-keyspace-events", "Kgxe").Err())
	waiterP := locktest.NewProvider(t, e.PC, &provider.Options{Namespace: e.NS})
	lease, err := e.P.AcquireLease(c, []string{"k"}, provider.LeaseOptions{Expire: 30 * time.Second})
	require.NoError(t, err)
	obs := waiter(t, waiterP, "k", wait)
	require.Eventually(t, func() bool {
		return provider.WakeupsLive(e.P) && provider.WakeupsLive(waiterP)
	}, wait, time.Millisecond, "both listeners are up")
	require.NoError(t, e.RDB.Del(c, e.Key("k")).Err())
	toldAt := told(t, lease)
	g := <-obs
	require.NoError(t, g.err)
	require.False(t, toldAt.After(g.at.Add(50*time.Millisecond)),
		"the holder was told %v after the waiter entered", toldAt.Sub(g.at))
	t.Logf("holder told %v after the waiter entered", toldAt.Sub(g.at))
}
