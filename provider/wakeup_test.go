package provider_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locktui/locktui/internal/testsupport/locktest"
	"github.com/locktui/locktui/provider"
	"github.com/stretchr/testify/require"
)

// slowBackoff is a backoff no waiter in these tests may sleep out: every sleep is at least half
// a minute (jitter), three times the bound (wait) within which a woken waiter must be done.
const slowBackoff = time.Minute

// waitSignal returns an Observer that reports, on the returned channel, the owner of every call
// that starts waiting for a key.
func waitSignal() (provider.Observer, <-chan string) {
	ch := make(chan string, 256)
	return provider.ObserverFunc(func(ev provider.Event) {
		if ev.Kind == provider.EventWaiting {
			ch <- ev.Owner
		}
	}), ch
}

// slowEnv is an env whose waiters only ever retry early when woken.
func slowEnv(t *testing.T, obs provider.Observer, waker provider.Waker) *env {
	return newEnv(t, &provider.Options{
		DefaultRetryInterval: slowBackoff, MaximumRetryInterval: slowBackoff, Observer: obs, Waker: waker,
	})
}

// goAcquire queues for keys as owner in the background; the call ends when the test ends.
func goAcquire(t *testing.T, p *provider.Provider, keys []string, owner string) <-chan error {
	c, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Go(func() { done <- p.Acquire(c, keys, provider.AcquireOptions{Owner: owner, AwaitQueue: true}) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return done
}

// awaitWaiting blocks until owner's call waits for a key.
func awaitWaiting(t *testing.T, waiting <-chan string, owner string) {
	t.Helper()
	for {
		select {
		case got := <-waiting:
			if got == owner {
				return
			}
		case <-time.After(wait):
			t.Fatalf("%s never started waiting", owner)
		}
	}
}

// result returns a call's error, failing the test if the call is still running after wait:
// far less than the backoff sleep it would be in if it had not been woken.
func result(t *testing.T, done <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(wait):
		t.Fatalf("%s did not end within %s: it was not woken (its backoff sleep is %s)", what, wait, slowBackoff)
		return nil
	}
}

// Every way this Provider deletes a key wakes its calls waiting on that key, which then get it
// at once instead of sleeping out their backoff.
func TestLocalReleaseWakesWaiters(t *testing.T) {
	type holdFunc func(t *testing.T, e *env) (release func())
	acquired := func(t *testing.T, e *env) {
		require.NoError(t, e.P.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: "holder"}))
	}
	cases := []struct {
		name string
		hold holdFunc
	}{
		{"Release", func(t *testing.T, e *env) func() {
			acquired(t, e)
			return func() {
				ok, err := e.P.Release(ctx(t), []string{"k"}, "holder")
				require.NoError(t, err)
				require.True(t, ok)
			}
		}},
		{"ReleaseAll", func(t *testing.T, e *env) func() {
			acquired(t, e)
			return func() {
				n, err := e.P.ReleaseAll(ctx(t), "holder")
				require.NoError(t, err)
				require.Equal(t, 1, n)
			}
		}},
		{"Lease.Release", func(t *testing.T, e *env) func() {
			l, err := e.P.AcquireLease(ctx(t), []string{"k"}, provider.LeaseOptions{})
			require.NoError(t, err)
			return func() {
				ok, err := l.Release(ctx(t))
				require.NoError(t, err)
				require.True(t, ok)
			}
		}},
		{"Execute", func(t *testing.T, e *env) func() {
			inJob, finish, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
			var finishOnce sync.Once
			end := func() { finishOnce.Do(func() { close(finish) }) }
			var wg sync.WaitGroup
			t.Cleanup(func() { end(); wg.Wait() })
			wg.Go(func() {
				done <- e.P.Execute(ctx(t), []string{"k"}, func(context.Context) error {
					close(inJob)
					<-finish
					return nil
				}, provider.ExecuteOptions{})
			})
			<-inJob
			return func() {
				end()
				require.NoError(t, result(t, done, "Execute"))
			}
		}},
		{"give-back of a failed Acquire", func(t *testing.T, e *env) func() {
			e.Set("k", "foreign", 0)
			e.Set("z", "other", 0)
			return func() {
				// Another process frees k: no wake-up. Then a call of this Provider takes k,
				// fails on z and gives k back: that wakes the waiter.
				require.NoError(t, e.RDB.Del(ctx(t), e.Key("k")).Err())
				err := e.P.Acquire(ctx(t), []string{"k", "z"}, provider.AcquireOptions{Owner: "x"})
				require.ErrorIs(t, err, provider.ErrNotAcquired)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obs, waiting := waitSignal()
			e := slowEnv(t, obs, nil)
			release := c.hold(t, e)
			done := goAcquire(t, e.P, []string{"k"}, "me")
			awaitWaiting(t, waiting, "me")
			release()
			require.NoError(t, result(t, done, "the waiter"))
			e.RequireOwner("k", "me")
		})
	}
}

// A waiter on several keys waits on the first held one only: giving back the later keys it
// took does not end its own wait, and the holder's release does.
func TestLocalWakeupOfAMultiKeyWait(t *testing.T) {
	obs, waiting := waitSignal()
	e := slowEnv(t, obs, nil)
	rec := record(e)
	attemptsOnB := func() int {
		n := 0
		for _, call := range rec.of("acquire") {
			if call.Key == e.Key("b") && call.Args[0] == "me" {
				n++
			}
		}
		return n
	}
	require.NoError(t, e.P.Acquire(ctx(t), []string{"b"}, provider.AcquireOptions{Owner: "holder"}))
	done := goAcquire(t, e.P, []string{"c", "a", "b"}, "me")
	awaitWaiting(t, waiting, "me")
	e.RequireFree("c") // given back while waiting on b
	// The wake-up subscription's confirmation wakes the waiter once (see listener).
	require.Eventually(t, func() bool { return attemptsOnB() >= 2 }, wait, time.Millisecond)
	ok, err := e.P.Release(ctx(t), []string{"b"}, "holder")
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, result(t, done, "the waiter"))
	for _, k := range []string{"a", "b", "c"} {
		e.RequireOwner(k, "me")
	}
	require.Equal(t, 3, attemptsOnB(),
		"one attempt before the wait, one on the subscription's confirmation, one after the release: nothing else woke it")
}

// blockingWaker stands for a Waker listening for releases elsewhere that never hears one: it
// returns only when its ctx ends, and counts the waits begun and ended.
type blockingWaker struct{ begun, ended atomic.Int32 }

func (w *blockingWaker) Wait(ctx context.Context, _ string, _ time.Duration) {
	w.begun.Add(1)
	<-ctx.Done()
	w.ended.Add(1)
}

// With a Waker, a local release ends the Waker's wait too (through its ctx): the waiter, whose
// backoff is a minute, gets the key at once, and no Waker wait is left running. (The wake-up
// subscription's confirmation may end a first wait before the release, so there may be two.)
func TestLocalReleaseEndsAWakersWait(t *testing.T) {
	obs, waiting := waitSignal()
	w := &blockingWaker{}
	e := slowEnv(t, obs, w)
	require.NoError(t, e.P.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: "holder"}))
	done := goAcquire(t, e.P, []string{"k"}, "me")
	awaitWaiting(t, waiting, "me")
	require.Eventually(t, func() bool { return w.begun.Load() > 0 }, wait, poll, "the waiter waits with the Waker")
	ok, err := e.P.Release(ctx(t), []string{"k"}, "holder")
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, result(t, done, "the waiter"))
	require.Positive(t, w.ended.Load())
	require.Equal(t, w.begun.Load(), w.ended.Load(), "every Waker wait ended")
	e.RequireOwner("k", "me")
}

// A release by another Provider is found by polling too, whether or not the wake-up reached
// the waiter (see TestForeignReleaseWakesAWaiter for the wake-up).
func TestForeignReleaseIsFoundByPolling(t *testing.T) {
	t.Run("default polling", func(t *testing.T) {
		obs, waiting := waitSignal()
		e := newEnv(t, &provider.Options{Observer: obs, DefaultRetryInterval: 10 * time.Millisecond, MaximumRetryInterval: 50 * time.Millisecond})
		other := locktest.NewProvider(t, e.Srv.Client(t), &provider.Options{Namespace: e.NS})
		require.NoError(t, other.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: "holder"}))
		done := goAcquire(t, e.P, []string{"k"}, "me")
		awaitWaiting(t, waiting, "me")
		ok, err := other.Release(ctx(t), []string{"k"}, "holder")
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, result(t, done, "the waiter"))
		e.RequireOwner("k", "me")
	})
}

// Callers of one Provider queued on one key hand it on to each other through wake-ups alone:
// every release wakes the longest-waiting one, which takes the key, and none misses the next
// release.
func TestLocalWaitersTakeTurns(t *testing.T) {
	e := slowEnv(t, nil, nil)
	const workers, rounds = 6, 5
	var inside, overlaps atomic.Int32
	errs := make(chan error, workers*rounds)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range rounds {
				errs <- e.P.Execute(ctx(t), []string{"k"}, func(context.Context) error {
					if inside.Add(1) > 1 {
						overlaps.Add(1)
					}
					inside.Add(-1)
					return nil
				}, provider.ExecuteOptions{Timeout: wait})
			}
		})
	}
	finished := make(chan error, 1)
	go func() { wg.Wait(); close(errs); finished <- nil }()
	require.NoError(t, result(t, finished, "the workers"))
	for err := range errs {
		require.NoError(t, err)
	}
	require.Zero(t, overlaps.Load())
	e.RequireFree("k")
	require.Zero(t, provider.PendingWakeups(e.P))
}

// Waits that end by cancellation, by timeout or by success leave no registration and no
// goroutine behind, and a later release of the key does not block.
func TestWakeupRegistrationsDoNotLeak(t *testing.T) {
	noLeaks(t)
	obs, waiting := waitSignal()
	e := slowEnv(t, obs, nil)
	require.NoError(t, e.P.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: "holder"}))

	for i := range 10 { // cancelled, single- and multi-key
		owner := fmt.Sprint("cancelled-", i)
		c, cancel := context.WithCancel(ctx(t))
		done := make(chan error, 1)
		go func() {
			done <- e.P.Acquire(c, []string{"a", "k", "z"}, provider.AcquireOptions{Owner: owner, AwaitQueue: true})
		}()
		awaitWaiting(t, waiting, owner)
		cancel()
		require.ErrorIs(t, result(t, done, owner), context.Canceled)
	}
	var wg sync.WaitGroup
	timeouts := make(chan error, 10)
	for range cap(timeouts) {
		wg.Go(func() {
			_, err := e.P.AcquireLease(ctx(t), []string{"k"}, provider.LeaseOptions{Timeout: 20 * time.Millisecond})
			timeouts <- err
		})
	}
	wg.Wait()
	for range cap(timeouts) {
		require.ErrorIs(t, <-timeouts, provider.ErrTimedOut)
	}
	for _, k := range []string{"a", "z"} {
		e.RequireFree(k)
	}
	require.Zero(t, provider.PendingWakeups(e.P))

	// Succeeded: each winner hands the key on to the next waiter.
	results := make(chan error, 5)
	for i := range cap(results) {
		owner := fmt.Sprint("winner-", i)
		wg.Go(func() {
			err := e.P.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: owner, AwaitQueue: true})
			if err == nil {
				_, err = e.P.Release(ctx(t), []string{"k"}, owner)
			}
			results <- err
		})
		awaitWaiting(t, waiting, owner)
	}
	ok, err := e.P.Release(ctx(t), []string{"k"}, "holder")
	require.NoError(t, err)
	require.True(t, ok)
	finished := make(chan error, 1)
	go func() { wg.Wait(); finished <- nil }()
	require.NoError(t, result(t, finished, "the waiters"))
	for range cap(results) {
		require.NoError(t, <-results)
	}
	require.Zero(t, provider.PendingWakeups(e.P))

	// A release with nobody waiting wakes nobody and returns.
	require.NoError(t, e.P.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: "holder"}))
	ok, err = e.P.Release(ctx(t), []string{"k"}, "holder")
	require.NoError(t, err)
	require.True(t, ok)
	e.RequireFree("k")
}
