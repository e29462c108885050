package provider_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/locktui/locktui/internal/testsupport/locktest"
	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/provider"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

func TestConflictErrorsMatchOnlyTheirKind(t *testing.T) {
	e := newEnv(t, &provider.Options{WaitLockingTimeout: 50 * time.Millisecond})
	e.Set("k", "holder", 0)

	notAcquired := e.P.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: "o"})
	timedOut := e.P.Execute(ctx(t), []string{"k"}, func(context.Context) error { return nil }, provider.ExecuteOptions{})
	for _, c := range []struct {
		err  error
		kind error
	}{{notAcquired, provider.ErrNotAcquired}, {timedOut, provider.ErrTimedOut}} {
		wrapped := fmt.Errorf("checkout: %w", c.err)
		for _, kind := range []error{provider.ErrNotAcquired, provider.ErrTimedOut, provider.ErrLockLost} {
			require.Equal(t, kind == c.kind, errors.Is(wrapped, kind), "%v is %v", c.err, kind)
		}
		var ce *provider.ConflictError
		require.ErrorAs(t, wrapped, &ce)
		require.Equal(t, c.kind, ce.Kind)
		require.Equal(t, []string{"k"}, ce.Keys)
		require.Equal(t, "conflict", ce.Type())
	}
	require.Equal(t, `Failed to acquire lock for key "k"`, notAcquired.Error())
	require.Equal(t, "Timed-out acquiring lock.", timedOut.Error())
}

// Redis errors (here WRONGTYPE: a non-lock key under the namespace) are returned with context,
// never as a conflict.
func TestRedisErrorsAreWrappedNotConflicts(t *testing.T) {
	e := newEnv(t, nil)
	require.NoError(t, e.RDB.HSet(ctx(t), e.Key("h"), "f", "v").Err())
	for _, await := range []bool{false, true} {
		err := e.P.Acquire(ctx(t), []string{"a", "h"}, provider.AcquireOptions{Owner: "o", AwaitQueue: await})
		require.Error(t, err)
		require.ErrorContains(t, err, "WRONGTYPE")
		require.ErrorContains(t, err, `"h"`)
		var ce *provider.ConflictError
		require.False(t, errors.As(err, &ce))
		e.RequireFree("a")
	}
	_, err := e.P.Release(ctx(t), []string{"h"}, "o")
	require.ErrorContains(t, err, "WRONGTYPE")
}

// A Redis that went away gives every call that does not wait a wrapped error naming the
// operation, within the context. (A wait rides it out until it ends: see
// TestAWaitWhoseRedisNeverComesBackSaysSo.) fastFail returns a provider on srv whose client gives up dialing at once; go-redis's default
// client retries dialing for seconds.
func fastFail(t *testing.T, srv *redistest.Server, opts provider.Options) *provider.Provider {
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { _ = client.Close() })
	opts.Namespace = locktest.Namespace(t)
	return locktest.NewProvider(t, client, &opts)
}

func TestRedisGoneGivesAClearError(t *testing.T) {
	srv := redistest.Start(t)
	p := fastFail(t, srv, provider.Options{})
	srv.Stop()
	c := ctx(t)
	checks := map[string]func() error{
		"acquire": func() error { return p.Acquire(c, []string{"k"}, provider.AcquireOptions{}) },
		"release": func() error { _, err := p.Release(c, []string{"k"}, ""); return err },
		"release all": func() error {
			_, err := p.ReleaseAll(c, "")
			return err
		},
	}
	for name, call := range checks {
		err := call()
		require.Error(t, err, name)
		require.ErrorContains(t, err, "connect", name)
		var ce *provider.ConflictError
		require.False(t, errors.As(err, &ce), "%s: %v is not a conflict", name, err)
		require.NoError(t, c.Err(), "%s returned only when the test's context ended", name)
	}
}

// With go-redis's default dial retries, a wait on a stopped Redis ends with its context, and
// says so. Once as many dials failed as the pool has connections, go-redis fails new dials at
// once; the wait then tries again until its context ends all the same, and says that Redis
// could not be reached.
func TestRedisGoneCallsEndWithTheirContext(t *testing.T) {
	srv := redistest.Start(t)
	e := newEnvOn(t, srv, nil)
	srv.Stop()
	calls := map[string]func(context.Context) error{
		"acquire queued": func(c context.Context) error {
			return e.P.Acquire(c, []string{"k"}, provider.AcquireOptions{AwaitQueue: true})
		},
		"execute": func(c context.Context) error {
			return e.P.Execute(c, []string{"k"}, func(context.Context) error { return nil }, provider.ExecuteOptions{Timeout: time.Hour})
		},
	}
	for name, call := range calls {
		c, cancel := context.WithTimeout(ctx(t), 200*time.Millisecond)
		err := call(c)
		ended := c.Err() != nil
		cancel()
		require.True(t, ended, "%s returned before its context ended: %v", name, err)
		require.ErrorIs(t, err, context.DeadlineExceeded, "%s: a call its context ended says so", name)
		var ce *provider.ConflictError
		require.ErrorAs(t, err, &ce, name)
		if down := (*provider.UnreachableError)(nil); errors.As(err, &down) {
			require.ErrorContains(t, down, "connect: connection refused", name)
		}
	}
}

// Redis going away while a job runs: renewals fail and are logged, the job finishes, and
// Execute does not hang.
func TestRedisGoneDuringTheJob(t *testing.T) {
	noLeaks(t)
	srv := redistest.Start(t)
	logs := &logSink{}
	p := fastFail(t, srv, provider.Options{Logger: logs.logger()})
	err := p.Execute(ctx(t), []string{"k"}, func(context.Context) error {
		srv.Stop()
		require.Eventually(t, func() bool {
			for _, m := range logs.messages() {
				if len(m) > 30 && m[:30] == `Failed to renew lock for key(s` {
					return true
				}
			}
			return false
		}, wait, poll)
		return nil
	}, provider.ExecuteOptions{Expire: time.Second})
	require.NoError(t, err, "the job succeeded; the failed release is logged, the lease expires")
	require.Contains(t, fmt.Sprint(logs.messages()), "Failed to release lock after execute")
}
