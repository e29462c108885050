package operator_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/testsupport/locktest"
	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
)

func TestForceReleaseComparesTheOwner(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	e.Set("k", "o1", 0)

	ok, err := locktest.DidRelease(e.Ops.ForceReleaseOwner(c, "k", "o2", operator.TellHolderFirst))
	require.NoError(t, err)
	require.False(t, ok)
	e.RequireOwner("k", "o1")

	ok, err = locktest.DidRelease(e.Ops.ForceReleaseOwner(c, "k", "o1", operator.TellHolderFirst))
	require.NoError(t, err)
	require.True(t, ok)
	e.RequireFree("k")

	ok, err = locktest.DidRelease(e.Ops.ForceReleaseOwner(c, "k", "o1", operator.TellHolderFirst))
	require.NoError(t, err)
	require.False(t, ok)
}

// ForceReleaseHold cuts off only the hold that was seen: a hold taken since under the same
// owner, by one of ours (a new token) or by stock (no record), or re-entered by another process
// (its record names that process), is spared; the hold seen, also after renewals and re-entries
// of the process seen, is released.
func TestForceReleaseHoldSparesANewHoldOfTheSameOwner(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	release := func(l operator.Lock) bool {
		t.Helper()
		ok, err := locktest.DidRelease(e.Ops.ForceReleaseHold(c, l, operator.TellHolderFirst))
		require.NoError(t, err)
		return ok
	}
	retake := func(k string, stock bool) {
		t.Helper()
		require.NoError(t, e.RDB.Del(c, e.Key(k)).Err())
		if stock { // a TTL other than ours (a minute): the record ours left must not pass for its
			e.StockTake(k, "shared", 30)
		} else {
			e.Token(e.P, k, "shared")
		}
	}

	e.Token(e.P, "ours", "shared")
	seen := e.Seen("ours")
	require.NotNil(t, seen.Record)
	retake("ours", false)
	require.False(t, release(seen), "our new hold under the same owner has another token")
	require.NotEqual(t, seen.Record.FencingToken, e.Seen("ours").Record.FencingToken)
	retake("ours", true)
	require.False(t, release(seen), "a stock hold under the same owner is not the hold seen")
	e.RequireOwner("ours", "shared")

	e.StockTake("stock", "shared", 30)
	seen = e.Seen("stock")
	require.Nil(t, seen.Record)
	retake("stock", false)
	require.False(t, release(seen), "our hold under the same owner is not the stock hold seen")
	e.RequireOwner("stock", "shared")
	retake("stock", true)
	require.True(t, release(seen), "a stock hold is one hold as long as it has no record")
	e.RequireFree("stock")

	e.Token(e.P, "joined", "shared")
	seen = e.Seen("joined")
	other := locktest.NewProvider(t, e.RDB, &provider.Options{Namespace: e.NS,
		Holder: provider.Holder{Host: "web-2", PID: 99, Program: "other-svc"}})
	e.Token(other, "joined", "shared") // another process joins the hold: the same token
	require.Equal(t, seen.Record.FencingToken, e.Seen("joined").Record.FencingToken)
	require.False(t, release(seen), "the process that re-entered was not seen")
	seen = e.Seen("joined")
	e.Token(other, "joined", "shared") // the process seen re-enters: the same hold
	require.False(t, release(operator.Lock{Key: "joined", Owner: "other", Record: seen.Record}))
	lease, err := e.P.AcquireLease(c, []string{"renewed"}, provider.LeaseOptions{Owner: "shared", Expire: 3 * time.Second})
	require.NoError(t, err)
	seenLease := e.Seen("renewed")
	pttl := func() time.Duration { return e.RDB.PTTL(c, e.Key("renewed")).Val() }
	low := pttl()
	require.Eventually(t, func() bool { // the TTL rose again: a renewal
		now := pttl()
		low = min(low, now)
		return now > low+100*time.Millisecond
	}, wait, poll, "the lease renews its key")
	require.True(t, release(seenLease), "a renewal does not change the hold")
	_, _ = lease.Release(c) // it lost its key: whatever it says
	require.True(t, release(seen))
	e.RequireFree("joined")
	require.False(t, release(seen), "gone")
}

func TestForceReleaseAnyReturnsTheOwner(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	e.Set("k", "execute:whoever", 10*time.Second)
	require.NoError(t, e.RDB.HSet(c, e.Key("h"), "f", "v").Err())

	owner, ok, err := locktest.DidReleaseAny(e.Ops.ForceReleaseAny(c, "k", operator.TellHolderFirst))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "execute:whoever", owner)
	e.RequireFree("k")

	_, ok, err = locktest.DidReleaseAny(e.Ops.ForceReleaseAny(c, "k", operator.TellHolderFirst))
	require.NoError(t, err)
	require.False(t, ok)

	_, ok, err = locktest.DidReleaseAny(e.Ops.ForceReleaseAny(c, "h", operator.TellHolderFirst))
	require.NoError(t, err)
	require.False(t, ok, "a key that is not a lock is not deleted")
	require.Equal(t, int64(1), e.RDB.Exists(c, e.Key("h")).Val())
}

// Holds that cannot be told are freed at once: a stock process's (no holder record), a plain
// acquisition's (not a lease); FreeNow frees a live lease at once too. (provider's
// TestAFreedLeaseHearsItAtOnce: its holder hears of it at once.)
func TestHoldsThatCannotBeToldAreFreedAtOnce(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	e.Set("stock", "stock-owner", time.Minute)
	seen := e.Seen("stock")
	require.Contains(t, operator.CannotBeTold(seen), "stock")
	how, err := e.Ops.ForceReleaseHold(c, seen, operator.TellHolderFirst)
	require.NoError(t, err)
	require.Equal(t, operator.Freed, how)
	e.RequireFree("stock")

	require.NoError(t, e.P.Acquire(c, []string{"plain"}, provider.AcquireOptions{Owner: "o", Expire: time.Minute}))
	seen = e.Seen("plain")
	require.Contains(t, operator.CannotBeTold(seen), "not a lease")
	how, err = e.Ops.ForceReleaseHold(c, seen, operator.TellHolderFirst)
	require.NoError(t, err)
	require.Equal(t, operator.Freed, how)
	e.RequireFree("plain")

	lease, err := e.P.AcquireLease(c, []string{"lease"}, provider.LeaseOptions{Expire: 30 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = lease.Release(context.Background()) })
	require.Empty(t, operator.CannotBeTold(e.Seen("lease")), "a live lease can be told")
	how, err = e.Ops.ForceReleaseOwner(c, "lease", lease.Owner(), operator.FreeNow)
	require.NoError(t, err)
	require.Equal(t, operator.Freed, how)
	e.RequireFree("lease")
}

// A live lease is told, not deleted: its record notes the revocation, the key stays its
// owner's until the holder releases it.
func TestForceReleaseTellsALiveLease(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	lease, err := e.P.AcquireLease(c, []string{"k"}, provider.LeaseOptions{Expire: 30 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = lease.Release(context.Background()) })
	how, err := e.Ops.ForceReleaseHold(c, e.Seen("k"), operator.TellHolderFirst)
	require.NoError(t, err)
	require.Equal(t, operator.HolderTold, how)
	require.True(t, how.Done())
	e.RequireOwner("k", lease.Owner())
	rec := e.Seen("k").Record
	require.NotNil(t, rec)
	require.False(t, rec.RevokedAt.IsZero(), "the record says when the hold was revoked")
}

// CannotBeTold says why a hold as seen is freed at once, and nothing for a live lease.
var cannotBeTold = []struct {
	name string
	lock operator.Lock
	want string // a part of the reason; "" for none
}{
	{"no record", operator.Lock{TTL: time.Minute}, "no holder record"},
	{"plain acquisition", operator.Lock{TTL: time.Minute, Record: &operator.Record{}}, "plain acquisition"},
	{"live lease", operator.Lock{TTL: 20 * time.Second, Record: &operator.Record{Lease: 30 * time.Second}}, ""},
	{"lease without expiry", operator.Lock{TTL: provider.NoExpiry, Record: &operator.Record{Lease: 30 * time.Second}}, ""},
	{"lease past its deadline", operator.Lock{TTL: 3 * time.Second, Record: &operator.Record{Lease: 30 * time.Second}}, "stopped renewing"},
}

func TestCannotBeTold(t *testing.T) {
	for _, tc := range cannotBeTold {
		t.Run(tc.name, func(t *testing.T) {
			got := operator.CannotBeTold(tc.lock)
			if tc.want == "" {
				require.Empty(t, got)
			} else {
				require.Contains(t, got, tc.want)
			}
		})
	}
}

// An operator's release of an owner's locks (ReleaseAllWith, TellHolderFirst: the console's D,
// release-all) tells the live leases among them and frees the others at once; FreeNow frees
// them all at once, as provider's ReleaseAll does.
func TestReleaseAllWithTellsLeasesFirst(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	const owner = "svc"
	e.HoldPlainAndLease(c, owner)
	e.Set("other", "someone-else", time.Minute)
	e.RequireReleaseAllTellsTheLease(c, owner)
	e.RequireOwner("other", "someone-else")

	got := map[string]operator.Revocation{}
	n, err := e.Ops.ReleaseAllWith(c, owner, operator.ScanOptions{}, operator.FreeNow,
		func(l operator.Lock, how operator.Revocation) { got[l.Key] = how })
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, map[string]operator.Revocation{"leased": operator.Freed}, got)
	e.RequireFree("leased")
}

// ReleaseAllWith asks opts.Pace before every round trip, for every command it sends: the
// SCANs, the reads and the compare-and-unlinks. An error from Pace ends the walk there.
func TestReleaseAllWithPacesEveryCommand(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	e.Fill("mine:", "o", 250)
	e.Fill("theirs:", "x", 250)
	counter := &redistest.Recorder{}
	e.IC.AddHook(counter)

	var paced, calls int
	n, err := e.Ops.ReleaseAllWith(c, "o", operator.ScanOptions{Pace: func(_ context.Context, scans, reads int) error {
		paced += scans + reads
		calls++
		return nil
	}}, operator.TellHolderFirst, nil)
	require.NoError(t, err)
	require.Equal(t, 250, n)
	cmds, trips := counter.Reset()
	require.Equal(t, cmds, paced, "every command sent was paced")
	require.Equal(t, trips, calls, "Pace is asked once per round trip")

	stop := errors.New("over budget")
	e.Set("mine:again", "o", 0)
	n, err = e.Ops.ReleaseAllWith(c, "o", operator.ScanOptions{Pace: func(context.Context, int, int) error { return stop }}, operator.TellHolderFirst, nil)
	require.ErrorIs(t, err, stop)
	require.Zero(t, n)
	e.RequireOwner("mine:again", "o")
}

// A force-release that frees a key wakes the calls of every Provider waiting for it (the script
// announces the free key), which then get it at once instead of sleeping out their backoff.
func TestForceReleaseWakesWaiters(t *testing.T) {
	for name, free := range map[string]func(t *testing.T, e *env){
		"ForceReleaseOwner": func(t *testing.T, e *env) {
			ok, err := locktest.DidRelease(e.Ops.ForceReleaseOwner(ctx(t), "k", "holder", operator.TellHolderFirst))
			require.NoError(t, err)
			require.True(t, ok)
		},
		"ForceReleaseAny": func(t *testing.T, e *env) {
			owner, ok, err := locktest.DidReleaseAny(e.Ops.ForceReleaseAny(ctx(t), "k", operator.TellHolderFirst))
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, "holder", owner)
		},
		"ReleaseAllWith": func(t *testing.T, e *env) {
			n, err := e.Ops.ReleaseAllWith(ctx(t), "holder", operator.ScanOptions{}, operator.TellHolderFirst, nil)
			require.NoError(t, err)
			require.Equal(t, 1, n)
		},
	} {
		t.Run(name, func(t *testing.T) {
			const slowBackoff = time.Minute // no waiter may sleep it out: at least half a minute
			waiting := make(chan struct{}, 1)
			e := newEnv(t, &provider.Options{DefaultRetryInterval: slowBackoff, MaximumRetryInterval: slowBackoff,
				Observer: provider.ObserverFunc(func(ev provider.Event) {
					if ev.Kind == provider.EventWaiting && ev.Owner == "me" {
						select {
						case waiting <- struct{}{}:
						default:
						}
					}
				})})
			require.NoError(t, e.P.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: "holder"}))
			done := make(chan error, 1)
			var wg sync.WaitGroup
			call, cancel := context.WithCancel(t.Context())
			wg.Go(func() {
				done <- e.P.Acquire(call, []string{"k"}, provider.AcquireOptions{Owner: "me", AwaitQueue: true})
			})
			t.Cleanup(func() { cancel(); wg.Wait() })
			select {
			case <-waiting:
			case <-time.After(wait):
				t.Fatal("the waiter never started waiting")
			}
			free(t, e)
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(wait):
				t.Fatalf("the waiter was not woken within %s (its backoff sleep is %s)", wait, slowBackoff)
			}
			e.RequireOwner("k", "me")
		})
	}
}

// The Observer hears of every key a force-release deleted, as a Provider's Observer hears of its
// releases (the console publishes them), and of nothing else.
func TestObserverHearsWhatAForceReleaseFreed(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	var mu sync.Mutex
	var events []provider.Event
	ops := operator.New(e.IC, &operator.Options{Namespace: e.NS, Observer: provider.ObserverFunc(func(ev provider.Event) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, ev)
	})})
	e.Set("a", "o", time.Minute)
	e.Set("b", "o", time.Minute)
	e.Set("c", "x", time.Minute)
	lease, err := e.P.AcquireLease(c, []string{"told"}, provider.LeaseOptions{Owner: "o", Expire: 30 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = lease.Release(context.Background()) })

	how, err := ops.ForceReleaseOwner(c, "a", "o", operator.TellHolderFirst)
	require.NoError(t, err)
	require.Equal(t, operator.Freed, how)
	n, err := ops.ReleaseAllWith(c, "o", operator.ScanOptions{}, operator.TellHolderFirst, nil)
	require.NoError(t, err)
	require.Equal(t, 2, n, "b freed, told's holder told")

	mu.Lock()
	defer mu.Unlock()
	var keys []string
	for _, ev := range events {
		require.Equal(t, provider.EventReleased, ev.Kind)
		require.Equal(t, "o", ev.Owner)
		keys = append(keys, ev.Key)
	}
	require.Equal(t, []string{"a", "b"}, keys, "a told holder releases the key itself")
}

// An operator's reads and force-releases on a Redis that went away fail with the transport
// error, never as anything else.
func TestRedisGoneGivesAClearError(t *testing.T) {
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { _ = client.Close() })
	ops := operator.New(client, &operator.Options{Namespace: locktest.Namespace(t)})
	srv.Stop()
	c := ctx(t)
	for name, call := range map[string]func() error{
		"list": func() error { _, err := ops.List(c); return err },
		"get":  func() error { _, _, err := ops.Get(c, "k"); return err },
		"force release": func() error {
			_, err := locktest.DidRelease(ops.ForceReleaseOwner(c, "k", "o", operator.TellHolderFirst))
			return err
		},
		"force any": func() error {
			_, _, err := locktest.DidReleaseAny(ops.ForceReleaseAny(c, "k", operator.TellHolderFirst))
			return err
		},
		"release all": func() error {
			_, err := ops.ReleaseAllWith(c, "o", operator.ScanOptions{}, operator.TellHolderFirst, nil)
			return err
		},
	} {
		err := call()
		require.Error(t, err, name)
		require.ErrorContains(t, err, "connect", name)
		require.NoError(t, c.Err(), "%s returned only when the test's context ended", name)
	}
}
