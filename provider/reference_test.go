package provider_test

// The cases of stock Medusa's own test suites for @medusajs/locking-redis 2.21.2, as Go tests
// against Redis. R7–R8, R10–R13 and T1 are the fixed (post-2.21.2) behaviour this provider
// implements.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locktui/locktui/internal/testsupport/locktest"
	"github.com/locktui/locktui/provider"
	"github.com/stretchr/testify/require"
)

// quick makes waiters poll often, so hand-overs between tests' jobs take milliseconds.
var quick = provider.Options{DefaultRetryInterval: time.Millisecond, MaximumRetryInterval: 20 * time.Millisecond}

func TestR1ExecuteRespectsTheLockedKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &quick)
	var stock atomic.Int64

	// Without a lock, ten buyers that all saw stock > 0 oversell (the barrier makes every
	// check happen before any write, as stock's 10 ms sleep does).
	stock.Store(5)
	var checked, wg sync.WaitGroup
	checked.Add(10)
	for range 10 {
		wg.Go(func() {
			inStock := stock.Load() > 0
			checked.Done()
			checked.Wait()
			if inStock {
				stock.Add(-1)
			}
		})
	}
	wg.Wait()
	require.Equal(t, int64(-5), stock.Load())

	// With Execute the buys serialize: stock ends at 0 and no two jobs overlap.
	stock.Store(5)
	var active, overlaps atomic.Int32
	buy := func(context.Context) error {
		if active.Add(1) > 1 {
			overlaps.Add(1)
		}
		defer active.Add(-1)
		if stock.Load() > 0 {
			time.Sleep(10 * time.Millisecond) // stock's window between check and write
			stock.Add(-1)
		}
		return nil
	}
	errs := make(chan error, 10)
	for range 10 {
		wg.Go(func() {
			errs <- e.P.Execute(ctx(t), []string{"item_1"}, buy, provider.ExecuteOptions{Timeout: wait})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, int64(0), stock.Load())
	require.Zero(t, overlaps.Load(), "two jobs ran at once")
	e.RequireFree("item_1")
}

func TestR2AcquireAndRelease(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	require.NoError(t, e.P.Acquire(c, []string{"key_name"}, provider.AcquireOptions{Owner: "user_id_123"}))

	ok, err := e.P.Release(c, []string{"key_name"}, "user_id_456")
	require.NoError(t, err)
	require.False(t, ok)

	err = e.P.Acquire(c, []string{"key_name"}, provider.AcquireOptions{Owner: "user_id_456"})
	conflict(t, err, provider.ErrNotAcquired, notAcquiredMsg("key_name"))

	ok, err = e.P.Release(c, []string{"key_name"}, "user_id_123")
	require.NoError(t, err)
	require.True(t, ok)
	e.RequireFree("key_name")
}

func TestR3AcquireAndReleaseDuringParallelCalls(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	key := []string{"mySpecialKey"}
	u1, u2 := provider.AcquireOptions{Owner: "user_id_456"}, provider.AcquireOptions{Owner: "user_id_000"}

	require.NoError(t, e.P.Acquire(c, key, u1))
	require.NoError(t, e.P.Acquire(c, key, u1), "the same owner re-enters")
	for range 2 {
		conflict(t, e.P.Acquire(c, key, u2), provider.ErrNotAcquired, notAcquiredMsg("mySpecialKey"))
	}
	require.NoError(t, e.P.Acquire(c, key, u1))

	ok, err := e.P.Release(c, key, u2.Owner)
	require.NoError(t, err)
	require.False(t, ok)
	ok, err = e.P.Release(c, key, u1.Owner)
	require.NoError(t, err)
	require.True(t, ok)
}

func TestR4NoOwnerNeverReenters(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	key := []string{"k"}
	require.NoError(t, e.P.Acquire(c, key, provider.AcquireOptions{}))
	for range 2 {
		conflict(t, e.P.Acquire(c, key, provider.AcquireOptions{}), provider.ErrNotAcquired, notAcquiredMsg("k"))
	}
	for range 2 {
		conflict(t, e.P.Acquire(c, key, provider.AcquireOptions{Owner: "user_id_000"}), provider.ErrNotAcquired, notAcquiredMsg("k"))
	}
	ok, err := e.P.Release(c, key, "user_id_000")
	require.NoError(t, err)
	require.False(t, ok)
	ok, err = e.P.Release(c, key, "")
	require.NoError(t, err)
	require.True(t, ok)
}

func TestR5ReleaseWhenTheJobFails(t *testing.T) {
	e := newEnv(t, nil)
	var calls1, calls2 int
	boom := errors.New("boom")
	err := e.P.Execute(ctx(t), []string{"lock_key"}, func(context.Context) error {
		calls1++
		return boom
	}, provider.ExecuteOptions{})
	require.Same(t, boom, err)
	e.RequireFree("lock_key")

	err = e.P.Execute(ctx(t), []string{"lock_key"}, func(context.Context) error {
		calls2++
		return nil
	}, provider.ExecuteOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, calls1)
	require.Equal(t, 1, calls2)
}

// R6 is timing-based by nature (a 1 s acquisition timeout); channels order the jobs so that only
// fn2's timeout depends on the clock.
func TestR6ReleaseOnTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &provider.Options{MaximumRetryInterval: 50 * time.Millisecond})
	var calls [3]atomic.Int32
	fn1Running, fn2Done := make(chan struct{}), make(chan struct{})
	var results [3]string
	var errs [3]error
	var wg sync.WaitGroup
	run := func(i int, timeout time.Duration, job func(context.Context) error) {
		errs[i] = e.P.Execute(ctx(t), []string{"lock_key"}, job, provider.ExecuteOptions{Timeout: timeout})
	}

	wg.Go(func() {
		run(0, time.Second, func(context.Context) error {
			calls[0].Add(1)
			close(fn1Running)
			<-fn2Done // hold the key past fn2's timeout
			results[0] = "fn_1"
			return nil
		})
	})
	<-fn1Running
	wg.Go(func() {
		defer close(fn2Done)
		run(1, time.Second, func(context.Context) error {
			calls[1].Add(1)
			results[1] = "fn_2"
			return nil
		})
	})
	wg.Go(func() {
		run(2, 5*time.Second, func(context.Context) error {
			calls[2].Add(1)
			results[2] = "fn_3"
			return nil
		})
	})
	wg.Wait()

	require.NoError(t, errs[0])
	require.Equal(t, "fn_1", results[0])
	conflict(t, errs[1], provider.ErrTimedOut, timedOutMsg)
	require.NoError(t, errs[2])
	require.Equal(t, "fn_3", results[2])
	require.Equal(t, [3]int32{1, 0, 1}, [3]int32{calls[0].Load(), calls[1].Load(), calls[2].Load()})
	e.RequireFree("lock_key")
}

func TestR8ReenterWithAwaitQueue(t *testing.T) {
	e := newEnv(t, nil)
	key := []string{"reentrant_key"}
	require.NoError(t, e.P.Acquire(ctx(t), key, provider.AcquireOptions{Owner: "owner_reentry", Expire: 10 * time.Second}))
	require.NoError(t, e.P.Acquire(ctx(t), key, provider.AcquireOptions{Owner: "owner_reentry", Expire: 10 * time.Second, AwaitQueue: true}))
	ok, err := e.P.Release(ctx(t), key, "owner_reentry")
	require.NoError(t, err)
	require.True(t, ok)
}

func TestR9ReleaseAllIsScopedToTheOwner(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	ten := 10 * time.Second
	require.NoError(t, e.P.Acquire(c, []string{"ra_mine"}, provider.AcquireOptions{Owner: "owner_a", Expire: ten}))
	require.NoError(t, e.P.Acquire(c, []string{"ra_theirs"}, provider.AcquireOptions{Owner: "owner_b", Expire: ten}))

	n, err := e.P.ReleaseAll(c, "owner_a")
	require.NoError(t, err)
	require.Equal(t, 1, n)

	require.NoError(t, e.P.Acquire(c, []string{"ra_mine"}, provider.AcquireOptions{Owner: "owner_c", Expire: ten}))
	err = e.P.Acquire(c, []string{"ra_theirs"}, provider.AcquireOptions{Owner: "owner_c", Expire: ten})
	conflict(t, err, provider.ErrNotAcquired, notAcquiredMsg("ra_theirs"))
	for key, owner := range map[string]string{"ra_mine": "owner_c", "ra_theirs": "owner_b"} {
		ok, err := e.P.Release(c, []string{key}, owner)
		require.NoError(t, err)
		require.True(t, ok)
	}
}

// R10: callers naming the same keys in opposite orders, all queueing, never deadlock: keys are
// taken in sorted order. Each holder holds both keys, so no two may overlap.
func TestR10NoDeadlockWithOppositeOrders(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &quick)
	second := locktest.NewProvider(t, shared.Client(t), &provider.Options{Namespace: e.NS,
		DefaultRetryInterval: time.Millisecond, MaximumRetryInterval: 5 * time.Millisecond})
	orders := [][]string{{"abba_a", "abba_b"}, {"abba_b", "abba_a"}}
	var active, overlaps atomic.Int32
	errs := make(chan error, 20)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			p := []*provider.Provider{e.P, second}[i%2]
			owner := fmt.Sprintf("caller-%d", i)
			c := ctx(t)
			if err := p.Acquire(c, orders[i%2], provider.AcquireOptions{Owner: owner, Expire: 10 * time.Second, AwaitQueue: true}); err != nil {
				errs <- err
				return
			}
			if active.Add(1) > 1 {
				overlaps.Add(1)
			}
			active.Add(-1)
			ok, err := p.Release(c, orders[i%2], owner)
			if err == nil && !ok {
				err = fmt.Errorf("%s: release returned false", owner)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Zero(t, overlaps.Load())
	e.RequireFree("abba_a")
	e.RequireFree("abba_b")
}

func TestR11FailedMultiKeyAcquireRollsBack(t *testing.T) {
	e := newEnv(t, nil)
	e.Set("rb_c", "owner_blocker", 10*time.Second)
	err := e.P.Acquire(ctx(t), []string{"rb_c", "rb_a"}, provider.AcquireOptions{Owner: "owner_caller", Expire: 10 * time.Second})
	conflict(t, err, provider.ErrNotAcquired, notAcquiredMsg("rb_c"))
	e.RequireFree("rb_a")
	require.NoError(t, e.P.Acquire(ctx(t), []string{"rb_a"}, provider.AcquireOptions{Owner: "owner_other"}))
	e.RequireOwner("rb_c", "owner_blocker")
}

func TestR12FailedAcquireKeepsKeysTheOwnerAlreadyHeld(t *testing.T) {
	e := newEnv(t, nil)
	e.Set("pre_a", "owner_caller", 0)
	e.Set("pre_z", "owner_blocker", 0)
	err := e.P.Acquire(ctx(t), []string{"pre_z", "pre_a", "pre_m"}, provider.AcquireOptions{Owner: "owner_caller"})
	conflict(t, err, provider.ErrNotAcquired, notAcquiredMsg("pre_z"))

	require.NoError(t, e.P.Acquire(ctx(t), []string{"pre_m"}, provider.AcquireOptions{Owner: "owner_probe"}))
	ok, err := e.P.Release(ctx(t), []string{"pre_a"}, "owner_caller")
	require.NoError(t, err)
	require.True(t, ok, "pre_a stays held by the owner that held it before the failed call")
	e.RequireOwner("pre_z", "owner_blocker")
}

func TestR13AnonymousAcquisitionsRollBack(t *testing.T) {
	e := newEnv(t, nil)
	e.Set("anon_b", "owner_blocker", 10*time.Second)
	err := e.P.Acquire(ctx(t), []string{"anon_b", "anon_a"}, provider.AcquireOptions{Expire: 10 * time.Second})
	conflict(t, err, provider.ErrNotAcquired, notAcquiredMsg("anon_b"))
	require.NoError(t, e.P.Acquire(ctx(t), []string{"anon_a"}, provider.AcquireOptions{Owner: "owner_probe"}))
}

// T1: a timed-out Execute gives back the key it took at once, leaves the other owner's key
// alone, never runs the job, and takes nothing later.
func TestT1TimedOutExecuteGivesBackItsKeys(t *testing.T) {
	e := newEnv(t, &provider.Options{MaximumRetryInterval: 20 * time.Millisecond})
	rec := record(e)
	e.Set("busy", "another-owner", 60*time.Second)
	called := false
	err := e.P.Execute(ctx(t), []string{"free", "busy"}, func(context.Context) error {
		called = true
		return nil
	}, provider.ExecuteOptions{Timeout: 300 * time.Millisecond})
	conflict(t, err, provider.ErrTimedOut, timedOutMsg)
	require.False(t, called)
	e.RequireFree("free")
	e.RequireOwner("busy", "another-owner")
	require.Greater(t, e.ttl("busy"), int64(50), "the other owner's TTL is untouched")

	// Once busy is released, the timed-out call does not take anything late.
	attempts := len(rec.of("acquire"))
	require.NoError(t, e.RDB.Del(ctx(t), e.Key("busy")).Err())
	var got string
	err = e.P.Execute(ctx(t), []string{"free"}, func(context.Context) error {
		got = "available"
		return nil
	}, provider.ExecuteOptions{})
	require.NoError(t, err)
	require.Equal(t, "available", got)
	require.Len(t, rec.of("acquire"), attempts+1, "only the new Execute tried to acquire")
	e.RequireFree("busy")
}

// M7: while Execute holds a key, another owner cannot take it; afterwards it can.
func TestM7HoldTheKeysUntilTheJobIsDone(t *testing.T) {
	e := newEnv(t, nil)
	other := provider.AcquireOptions{Owner: "someone_else"}
	err := e.P.Execute(ctx(t), []string{"held_key"}, func(c context.Context) error {
		err := e.P.Acquire(c, []string{"held_key"}, other)
		conflict(t, err, provider.ErrNotAcquired, notAcquiredMsg("held_key"))
		return nil
	}, provider.ExecuteOptions{})
	require.NoError(t, err)
	require.NoError(t, e.P.Acquire(ctx(t), []string{"held_key"}, other))
	ok, err := e.P.Release(ctx(t), []string{"held_key"}, "someone_else")
	require.NoError(t, err)
	require.True(t, ok)
}
