package provider_test

// U1–U9 of stock's redis-lock-execute.spec, as assertions on the script calls the provider
// sends (recorded with a go-redis hook) and on Redis state; then the Lease API.

import (
	"context"
	"errors"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locktui/locktui/internal/testsupport/locktest"
	"github.com/locktui/locktui/provider"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

func lostMsg(keys string) string {
	return "Lost the lock for key(s) " + keys + ` while the job was still running: the lease expired before it could be renewed. Increase "expire" if the job is expected to run this long.`
}

// lostAtDeadlineMsg is the message of a lease lost at its deadline, no renewal having failed.
func lostAtDeadlineMsg(keys string) string {
	return "Lost the lock for key(s) " + keys + " while the job was still running: the lease expired: no renewal was confirmed before its deadline (Redis could not be reached in time)."
}

// lostToRestartMsg is the message of a lease lost because its Redis restarted or failed over.
func lostToRestartMsg(keys string) string {
	return "Lost the lock for key(s) " + keys + " while the job was still running: the Redis server restarted or failed over, which may have lost the keys."
}

func TestU1ReleasesUnderTheOwnerItAcquiredWith(t *testing.T) {
	e := newEnv(t, nil)
	rec := record(e)
	require.NoError(t, e.P.Execute(ctx(t), []string{"key"}, func(context.Context) error { return nil }, provider.ExecuteOptions{}))

	acquires, releases := rec.of("acquire"), rec.of("release")
	require.Len(t, acquires, 1)
	require.Equal(t, e.Key("key"), acquires[0].Key)
	owner := acquires[0].Args[0]
	require.NotEqual(t, "*", owner)
	require.Regexp(t, executeOwner, owner)
	require.Len(t, releases, 1)
	require.Equal(t, e.Key("key"), releases[0].Key)
	require.Equal(t, owner, releases[0].Args[0])
	e.RequireFree("key")
}

func TestU2EveryCallGetsItsOwnOwner(t *testing.T) {
	e := newEnv(t, nil)
	rec := record(e)
	for range 2 {
		require.NoError(t, e.P.Execute(ctx(t), []string{"key"}, func(context.Context) error { return nil }, provider.ExecuteOptions{}))
	}
	acquires := rec.of("acquire")
	require.Len(t, acquires, 2)
	require.NotEqual(t, acquires[0].Args[0], acquires[1].Args[0])
}

// U3/U4: the lease is Expire (default 60 s), whatever the acquisition timeout.
func TestU3U4LeaseIsIndependentOfTheTimeout(t *testing.T) {
	cases := []struct {
		opts provider.ExecuteOptions
		want string
	}{
		{provider.ExecuteOptions{Timeout: 2 * time.Second}, "60"},
		{provider.ExecuteOptions{}, "60"},
		{provider.ExecuteOptions{Expire: 900 * time.Second}, "900"},
		{provider.ExecuteOptions{Expire: 900 * time.Second, Timeout: time.Second}, "900"},
		{provider.ExecuteOptions{Expire: 1500 * time.Millisecond}, "2"},
	}
	for _, c := range cases {
		e := newEnv(t, nil)
		rec := record(e)
		require.NoError(t, e.P.Execute(ctx(t), []string{"key"}, func(context.Context) error {
			require.Equal(t, c.want, itoa(e.ttl("key")), "Redis TTL during the job")
			return nil
		}, c.opts))
		acquires := rec.of("acquire")
		require.Len(t, acquires, 1)
		require.Equal(t, c.want, acquires[0].Args[1], "TTL sent with %+v", c.opts)
	}
}

// U5/U6: while the job runs every key is extended with the lease TTL, every max(expire/3,
// 250 ms); nothing is extended once Execute returned (its renewals are stopped).
func TestU5U6RenewEveryKeyWhileTheJobRuns(t *testing.T) {
	for _, expire := range []time.Duration{time.Second, 2 * time.Second} {
		t.Run(expire.String(), func(t *testing.T) {
			noLeaks(t)
			e := newEnv(t, nil)
			rec := record(e)
			interval := expire / 3
			var started time.Time
			err := e.P.Execute(ctx(t), []string{"key_1", "key_2"}, func(context.Context) error {
				started = time.Now()
				require.Eventually(t, func() bool { return len(rec.of("extend")) >= 4 }, wait, poll)
				for _, k := range []string{"key_1", "key_2"} {
					v, ok := e.Owner(k)
					require.True(t, ok, "the lease outlived its TTL: renewed")
					require.Regexp(t, executeOwner, v)
				}
				return nil
			}, provider.ExecuteOptions{Expire: expire})
			require.NoError(t, err)

			extends := rec.of("extend")
			owner := rec.of("acquire")[0].Args[0]
			keys := map[string]int{}
			for _, c := range extends {
				keys[c.Key]++
				require.Equal(t, []string{owner, itoa(int64(expire / time.Second))}, c.Args[:2], "stock's arguments, then the claim")
			}
			require.Equal(t, keys[e.Key("key_1")], keys[e.Key("key_2")], "every round extends every key")
			// Lower bounds only: a slow machine renews later, never earlier.
			require.GreaterOrEqual(t, extends[0].At.Sub(started), interval-50*time.Millisecond)
			require.GreaterOrEqual(t, extends[2].At.Sub(extends[0].At), interval-50*time.Millisecond)
		})
	}
}

// U7: a lease that is lost (key deleted or taken by someone else) cancels the job's context with
// the stock message; the thief's value is left alone.
func TestU7LostLeaseCancelsTheJob(t *testing.T) {
	cases := []struct {
		name  string
		steal func(e *env)
		thief bool
	}{
		{"deleted", func(e *env) { e.RDB.Del(context.Background(), e.Key("b")) }, false},
		{"stolen", func(e *env) { e.Set("b", "thief", 0) }, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			noLeaks(t)
			logs := &logSink{}
			e := newEnv(t, &provider.Options{Logger: logs.logger()})
			var cause error
			err := e.P.Execute(ctx(t), []string{"a", "b"}, func(jobCtx context.Context) error {
				c.steal(e)
				<-jobCtx.Done()
				cause = context.Cause(jobCtx)
				return nil
			}, provider.ExecuteOptions{Expire: time.Second})

			conflict(t, cause, provider.ErrLockLost, lostMsg(`"b"`))
			ce := conflict(t, err, provider.ErrLockLost, lostMsg(`"b"`))
			require.Equal(t, []string{"b"}, ce.Keys)
			require.Contains(t, logs.messages(), lostMsg(`"b"`))
			e.RequireFree("a")
			if c.thief {
				e.RequireOwner("b", "thief")
				require.Equal(t, int64(-1), e.ttl("b"), "the thief's TTL is untouched")
			} else {
				e.RequireFree("b")
			}
		})
	}
}

// The lost-lease message names the keys in the caller's order, as stock's does, although the
// keys are taken in sorted order.
func TestLostLeaseMessageKeepsCallerOrder(t *testing.T) {
	noLeaks(t)
	e := newEnv(t, nil)
	err := e.P.Execute(ctx(t), []string{"z", "a", "m", "z"}, func(jobCtx context.Context) error {
		e.RDB.Del(context.Background(), e.Key("a"), e.Key("z"))
		<-jobCtx.Done()
		return nil
	}, provider.ExecuteOptions{Expire: time.Second})
	ce := conflict(t, err, provider.ErrLockLost, lostMsg(`"z", "a"`))
	require.Equal(t, []string{"z", "a"}, ce.Keys)
}

// A key replaced by a value of another type is lost too (stock would retry forever), and the
// foreign value is left alone.
func TestLeaseKeyReplacedByAnotherTypeIsLost(t *testing.T) {
	e := newEnv(t, nil)
	err := e.P.Execute(ctx(t), []string{"k"}, func(jobCtx context.Context) error {
		e.RDB.Del(context.Background(), e.Key("k"))
		e.RDB.HSet(context.Background(), e.Key("k"), "f", "v")
		<-jobCtx.Done()
		return nil
	}, provider.ExecuteOptions{Expire: time.Second})
	conflict(t, err, provider.ErrLockLost, lostMsg(`"k"`))
	require.Equal(t, "v", e.RDB.HGet(ctx(t), e.Key("k"), "f").Val())

	l, err := e.P.AcquireLease(ctx(t), []string{"a", "b"}, provider.LeaseOptions{})
	require.NoError(t, err)
	e.RDB.Del(ctx(t), e.Key("b"))
	e.RDB.HSet(ctx(t), e.Key("b"), "f", "v")
	ok, err := l.Release(ctx(t))
	require.NoError(t, err, "a key that became another type is not ours to release: no error")
	require.False(t, ok)
	e.RequireFree("a")
}

func TestU7JobErrorWinsOverTheLoss(t *testing.T) {
	e := newEnv(t, nil)
	mine := errors.New("gave up")
	err := e.P.Execute(ctx(t), []string{"k"}, func(jobCtx context.Context) error {
		e.Set("k", "thief", 0)
		<-jobCtx.Done()
		return mine
	}, provider.ExecuteOptions{Expire: time.Second})
	require.Same(t, mine, err)
	e.RequireOwner("k", "thief")
}

// U8: a renewal that cannot reach Redis is logged (stock's message) and retried; the job keeps
// running.
func TestU8RenewalErrorKeepsTheJobRunning(t *testing.T) {
	noLeaks(t)
	logs := &logSink{}
	e := newEnv(t, &provider.Options{Logger: logs.logger()})
	rec := record(e)
	failed := 0
	rec.setFail(func(_ context.Context, c scriptCall) error {
		if c.Script == "extend" && !slices.Contains(c.Args, "check") && failed == 0 {
			failed++
			return errors.New("Connection is closed.")
		}
		return nil
	})
	err := e.P.Execute(ctx(t), []string{"k"}, func(jobCtx context.Context) error {
		require.Eventually(t, func() bool { return len(rec.of("extend")) >= 1 }, wait, poll)
		require.NoError(t, jobCtx.Err(), "the job is still running")
		return nil
	}, provider.ExecuteOptions{Expire: 2 * time.Second})
	require.NoError(t, err)
	require.Equal(t, 1, failed)
	e.RequireFree("k")

	var warned string
	for _, m := range logs.messages() {
		if strings.HasPrefix(m, `Failed to renew lock for key(s) "k": `) {
			warned = m
		}
	}
	require.NotEmpty(t, warned, "logs: %q", logs.messages())
	require.Contains(t, warned, "Connection is closed.")
	// Stock retries after the renewal interval (666 ms here); a lease with a local deadline
	// retries sooner, from renewRetryMin (100 ms) doubling up to the interval.
	require.True(t, strings.HasSuffix(warned, ". Retrying in 100ms."), warned)
}

// U9: an acquisition whose reply is lost after the script ran (the caller had stopped waiting) is
// a timeout, the job never runs and the key the script took is given back. The reply can be lost
// to a read timeout, or to the context deadline on a client that applies it to socket I/O; and a
// hook or wrapper above go-redis may report the caller's context error for a request that went
// out even when the client does not cut socket I/O at deadlines.
func TestU9LateAcquisitionIsGivenBack(t *testing.T) {
	readTimeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	cases := []struct {
		name         string
		ctxDeadlines bool
		lost         func(ctx context.Context) error
	}{
		{"read timeout", false, func(context.Context) error { return readTimeout }},
		{"context deadline", true, func(ctx context.Context) error { return ctx.Err() }},
		{"context error without I/O deadlines", false, func(ctx context.Context) error { return ctx.Err() }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			client := redis.NewClient(&redis.Options{Addr: shared.Addr, ContextTimeoutEnabled: c.ctxDeadlines})
			t.Cleanup(func() { _ = client.Close() })
			e := newEnv(t, nil)
			e.PC, e.P = client, locktest.NewProvider(t, client, &provider.Options{Namespace: e.NS})
			rec := record(e)
			rec.setAfter(func(ctx context.Context, sc scriptCall) error {
				if sc.Script == "acquire" {
					<-ctx.Done()
					return c.lost(ctx)
				}
				return nil
			})
			err := e.P.Execute(ctx(t), []string{"key"}, func(context.Context) error {
				t.Error("the job must not run")
				return nil
			}, provider.ExecuteOptions{Timeout: 100 * time.Millisecond})
			conflict(t, err, provider.ErrTimedOut, timedOutMsg)
			e.RequireFree("key")
			givebacks := rec.of("giveback")
			require.Len(t, givebacks, 1)
			require.Equal(t, rec.of("acquire")[0].Args[:1], givebacks[0].Args[:1], "given back under the call's own owner")
			require.Equal(t, rec.of("acquire")[0].Args[2], givebacks[0].Args[1], "and its own claim")
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
