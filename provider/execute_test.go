package provider_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/locktui/locktui/provider"
	"github.com/stretchr/testify/require"
)

type jobError struct{ code int }

func (e *jobError) Error() string { return fmt.Sprintf("job failed with %d", e.code) }

func TestExecuteReturnsTheJobsErrorUnchanged(t *testing.T) {
	e := newEnv(t, nil)
	sentinel := errors.New("out of stock")
	wrapped := fmt.Errorf("buy: %w", sentinel)
	typed := &jobError{code: 7}
	for _, want := range []error{sentinel, wrapped, typed} {
		err := e.P.Execute(ctx(t), []string{"k"}, func(context.Context) error { return want }, provider.ExecuteOptions{})
		require.True(t, err == want, "Execute returned %v, want the job's own error", err)
		e.RequireFree("k")
	}
	err := e.P.Execute(ctx(t), []string{"k"}, func(context.Context) error { return wrapped }, provider.ExecuteOptions{})
	require.ErrorIs(t, err, sentinel, "errors.Is sees through the job's own wrapping")
	err = e.P.Execute(ctx(t), []string{"k"}, func(context.Context) error { return typed }, provider.ExecuteOptions{})
	var je *jobError
	require.ErrorAs(t, err, &je)
	require.Equal(t, 7, je.code)
}

func TestExecuteHoldsEveryKeyWhileTheJobRuns(t *testing.T) {
	e := newEnv(t, nil)
	err := e.P.Execute(ctx(t), []string{"b", "a", "b"}, func(context.Context) error {
		a, okA := e.Owner("a")
		b, okB := e.Owner("b")
		require.True(t, okA && okB)
		require.Equal(t, a, b, "one owner for every key")
		require.Regexp(t, executeOwner, a)
		return nil
	}, provider.ExecuteOptions{})
	require.NoError(t, err, "a key named twice does not block on itself")
	e.RequireFree("a")
	e.RequireFree("b")
}

func TestExecuteRejectsBadArguments(t *testing.T) {
	e := newEnv(t, nil)
	err := e.P.Execute(ctx(t), nil, func(context.Context) error { return nil }, provider.ExecuteOptions{})
	require.ErrorIs(t, err, provider.ErrInvalidArgument)
	err = e.P.Execute(ctx(t), []string{"k"}, nil, provider.ExecuteOptions{})
	require.ErrorIs(t, err, provider.ErrInvalidArgument)
	ran := false
	err = e.P.Execute(ctx(t), []string{"k"}, func(context.Context) error { ran = true; return nil },
		provider.ExecuteOptions{Expire: provider.NoExpiry})
	require.ErrorIs(t, err, provider.ErrInvalidArgument, "a lease always expires")
	require.ErrorContains(t, err, "NoExpiry is for Acquire only")
	require.False(t, ran)
	e.RequireFree("k")
}

// A job that panics still gives its keys back (and its lease stops renewing).
func TestExecuteReleasesWhenTheJobPanics(t *testing.T) {
	noLeaks(t)
	e := newEnv(t, nil)
	require.PanicsWithValue(t, "job exploded", func() {
		_ = e.P.Execute(ctx(t), []string{"k"}, func(context.Context) error { panic("job exploded") }, provider.ExecuteOptions{})
	})
	e.RequireFree("k")
}

func TestExecuteTimeoutGivesBackEveryKeyItTook(t *testing.T) {
	e := newEnv(t, &provider.Options{MaximumRetryInterval: 20 * time.Millisecond})
	rec := record(e)
	e.Set("b", "another-owner", 0)
	err := e.P.Execute(ctx(t), []string{"c", "b", "a"}, func(context.Context) error {
		t.Error("the job must not run")
		return nil
	}, provider.ExecuteOptions{Timeout: 200 * time.Millisecond})
	conflict(t, err, provider.ErrTimedOut, timedOutMsg)
	e.RequireFree("a")
	e.RequireFree("c")
	e.RequireOwner("b", "another-owner")
	require.Equal(t, int64(-1), e.ttl("b"))

	acquires := rec.of("acquire")
	require.NotEmpty(t, acquires)
	owner := acquires[0].Args[0]
	require.NotEmpty(t, rec.of("giveback"))
	for _, c := range rec.of("giveback") {
		// b is given back too (its reply may have been lost), claim-checked: it stays the
		// other owner's, as checked above.
		require.Equal(t, owner, c.Args[0], "given back under the call's own owner")
	}
}

func TestExecuteDefaultTimeoutIsWaitLockingTimeout(t *testing.T) {
	e := newEnv(t, &provider.Options{WaitLockingTimeout: 100 * time.Millisecond})
	e.Set("k", "holder", 0)
	err := e.P.Execute(ctx(t), []string{"k"}, func(context.Context) error { return nil }, provider.ExecuteOptions{})
	conflict(t, err, provider.ErrTimedOut, timedOutMsg)
}

// The timeout can fire while an attempt waits to be sent (here: for a connection); it is still a
// timeout and nothing is left held. The provider cannot tell an attempt that was never sent from
// one whose reply was lost, so it gives the keys back anyway, under the call's own owner.
func TestExecuteTimeoutDuringAnAttemptIsATimeout(t *testing.T) {
	e := newEnv(t, nil)
	rec := record(e)
	owner := make(chan string, 1)
	rec.setFail(func(ctx context.Context, c scriptCall) error {
		if c.Script == "acquire" {
			select {
			case owner <- c.Args[0]:
			default:
			}
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	})
	err := e.P.Execute(ctx(t), []string{"a", "b"}, func(context.Context) error { return nil },
		provider.ExecuteOptions{Timeout: 100 * time.Millisecond})
	conflict(t, err, provider.ErrTimedOut, timedOutMsg)
	e.RequireFree("a")
	e.RequireFree("b")
	require.Empty(t, rec.of("acquire"), "no acquisition was sent")
	callOwner := <-owner
	for _, c := range rec.of("giveback") {
		require.Equal(t, callOwner, c.Args[0], "given back owner-checked, under the call's own owner")
	}
}

func TestExecuteCancelWhileWaiting(t *testing.T) {
	waiting := make(chan struct{}, 1)
	obs := provider.ObserverFunc(func(ev provider.Event) {
		if ev.Kind == provider.EventWaiting {
			waiting <- struct{}{}
		}
	})
	e := newEnv(t, &provider.Options{DefaultRetryInterval: time.Hour, MaximumRetryInterval: time.Hour, Observer: obs})
	e.Set("b", "holder", 0)
	c, cancel := context.WithCancel(ctx(t))
	done := make(chan error, 1)
	go func() {
		done <- e.P.Execute(c, []string{"a", "b"}, func(context.Context) error { return nil }, provider.ExecuteOptions{Timeout: time.Hour})
	}()
	<-waiting
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(wait):
		t.Fatal("Execute did not return after its context was cancelled")
	}
	e.RequireFree("a")
	e.RequireOwner("b", "holder")
}

func TestExecuteJobContextEndsWithTheCallersContext(t *testing.T) {
	e := newEnv(t, nil)
	c, cancel := context.WithCancel(ctx(t))
	err := e.P.Execute(c, []string{"k"}, func(jobCtx context.Context) error {
		cancel()
		<-jobCtx.Done()
		return jobCtx.Err()
	}, provider.ExecuteOptions{})
	require.ErrorIs(t, err, context.Canceled)
	e.RequireFree("k")
}
