package provider_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/provider"
)

// TestAKeyFreedHereGoesToTheCallThatWaitedNotToANewcomer: a holder releases a key that another
// call of this provider waits for, and at once calls for the key again (as a bridge client does
// whose execute does not await its release). The waiter, woken by the release, gets the key
// first: the newcomer's attempt defers to it instead of racing its wake-up.
func TestAKeyFreedHereGoesToTheCallThatWaitedNotToANewcomer(t *testing.T) {
	waiting := make(chan string, 16)
	obs := provider.ObserverFunc(func(ev provider.Event) {
		if ev.Kind == provider.EventWaiting {
			waiting <- ev.Key
		}
	})
	// The waiter's backoff is long: only the release's wake-up can let it in in time.
	e := newEnv(t, &provider.Options{DefaultRetryInterval: time.Hour, MaximumRetryInterval: time.Hour, Observer: obs})
	for round := range 10 {
		key := fmt.Sprintf("handoff%d", round)
		order := make(chan string, 2)
		held, release := make(chan struct{}), make(chan struct{})
		newcomer := make(chan error, 1)
		go func() {
			err := e.P.Execute(ctx(t), []string{key}, func(context.Context) error {
				close(held)
				<-release
				return nil
			}, provider.ExecuteOptions{})
			if err != nil {
				newcomer <- err
				return
			}
			newcomer <- e.P.Execute(ctx(t), []string{key}, func(context.Context) error {
				order <- "newcomer"
				return nil
			}, provider.ExecuteOptions{Timeout: 5 * time.Second})
		}()
		<-held
		waiter := make(chan error, 1)
		go func() {
			waiter <- e.P.Execute(ctx(t), []string{key}, func(context.Context) error {
				order <- "waiter"
				return nil
			}, provider.ExecuteOptions{Timeout: 5 * time.Second})
		}()
		for k := range waiting { // the waiter waits (the events of earlier rounds' newcomers are skipped)
			if k == key {
				break
			}
		}
		close(release)
		require.NoError(t, <-waiter)
		require.NoError(t, <-newcomer)
		require.Equal(t, "waiter", <-order, "round %d: the call that waited gets the freed key first", round)
	}
}

// hookWaker sleeps as the default Waker does; the first wait that a wake-up ends runs onWoken
// before it returns (in the woken waiter's goroutine, before its next attempt).
type hookWaker struct {
	armed   atomic.Bool
	once    sync.Once
	onWoken func()
}

func (w *hookWaker) Wait(ctx context.Context, _ string, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		if w.armed.Load() {
			w.once.Do(w.onWoken)
		}
	case <-t.C:
	}
}

// A key handed to a woken waiter whose wait ends before its next attempt (its ctx ended: a
// client's cancel, a connection that ended, a timeout) is free: a call that deferred to the
// hand-off must not sleep a whole backoff before it tries the key again.
func TestADeferredCallDoesNotSleepABackoffWhenTheHandOffIsNotTakenUp(t *testing.T) {
	waiting := make(chan struct{}, 16)
	obs := provider.ObserverFunc(func(ev provider.Event) {
		if ev.Kind == provider.EventWaiting {
			waiting <- struct{}{}
		}
	})
	wk := &hookWaker{}
	e := newEnv(t, &provider.Options{DefaultRetryInterval: 10 * time.Second, MaximumRetryInterval: 10 * time.Second,
		Observer: obs, Waker: wk})
	holder, err := e.P.AcquireLease(ctx(t), []string{"k"}, provider.LeaseOptions{})
	require.NoError(t, err)

	waiterCtx, cancelWaiter := context.WithCancel(ctx(t))
	newcomer := make(chan error, 1)
	var took time.Duration
	wk.onWoken = func() { // the waiter was woken by the release below; a newcomer comes, then the waiter's ctx ends
		go func() {
			start := time.Now()
			newcomer <- e.P.Execute(ctx(t), []string{"k"}, func(context.Context) error {
				took = time.Since(start)
				return nil
			}, provider.ExecuteOptions{Timeout: 2 * time.Second})
		}()
		select { // the newcomer deferred to the hand-off and waits
		case <-waiting:
		case <-time.After(200 * time.Millisecond):
		}
		cancelWaiter() // before its attempt: the hand-off is never taken up
	}
	waiter := make(chan error, 1)
	go func() {
		waiter <- e.P.Execute(waiterCtx, []string{"k"}, func(context.Context) error { return nil },
			provider.ExecuteOptions{Timeout: 5 * time.Second})
	}()
	<-waiting // the waiter waits
	require.Eventually(t, func() bool { return provider.WakeupsLive(e.P) }, wait, time.Millisecond)
	time.Sleep(50 * time.Millisecond) // the waiter woken by the subscription's confirmation waits again
	// Without the waiters' marker the release announces nothing: only this Provider's own
	// wake-up (the hand-off) follows it. (With it, the announcement, when heard after the
	// delete's hold, happens to wake the deferred call: a race, not a rule.)
	require.NoError(t, e.RDB.Del(ctx(t), provider.WaitersKey(e.P.RedisKey("k"))).Err())
	wk.armed.Store(true)
	_, err = holder.Release(ctx(t))
	require.NoError(t, err)
	require.Error(t, <-waiter)
	require.NoError(t, <-newcomer, "the key is free: the newcomer gets it")
	require.Less(t, took, 200*time.Millisecond, "the newcomer waited at most about handOffLimit")
}
