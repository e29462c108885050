package provider_test

// Waits ride out a Redis that cannot be reached (stopped, restarted, failing over) within their
// timeout; see docs/waiting.md.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/redisproc"
	"github.com/locktui/locktui/internal/testsupport/faultproxy"
	"github.com/locktui/locktui/internal/testsupport/locktest"
	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/provider"
)

// replyError is a Redis error reply, as go-redis types them.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

var unreachableCases = []struct {
	err  error
	want bool
}{
	{&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
	{&net.OpError{Op: "dial", Net: "tcp", Err: context.Canceled}, true}, // go-redis's fast failure repeats a cut dial
	{&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, true},
	{fmt.Errorf("redis: %w", io.EOF), true},
	{io.ErrUnexpectedEOF, true},
	{redis.ErrPoolTimeout, true},
	{errors.New("redis: all sentinels specified in configuration are unreachable"), true},
	{replyError("LOADING Redis is loading the dataset in memory"), true},
	{fmt.Errorf("redis: %w", replyError("READONLY You can't write against a read only replica.")), true},
	{replyError("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."), true},
	{replyError("TRYAGAIN Multiple keys request during rehashing of slot"), true},
	{replyError("CLUSTERDOWN The cluster is down"), true},
	{replyError("WRONGTYPE Operation against a key holding the wrong kind of value"), false},
	{replyError("NOSCRIPT No matching script. Please use EVAL."), false},
	{replyError("ERR unknown command"), false},
	{replyError("NOPERM this user has no permissions"), false},
	{redis.Nil, false},
	{redis.ErrClosed, false},
	{context.Canceled, false},
	{context.DeadlineExceeded, false},
	{errors.New("acquire.lua replied [1], want {status, token}"), false},
	{nil, false},
}

func TestIsUnreachable(t *testing.T) {
	for _, c := range unreachableCases {
		require.Equal(t, c.want, provider.IsUnreachable(c.err), "IsUnreachable(%v)", c.err)
	}
}

// unreachableTrips returns how many of rec's round trips failed because Redis could not be
// reached (provider.IsUnreachable).
func unreachableTrips(rec *redistest.Recorder) int {
	failed := map[int]bool{}
	for _, c := range rec.Calls() {
		if provider.IsUnreachable(c.Err) {
			failed[c.Trip] = true
		}
	}
	return len(failed)
}

// awaitUnreachable waits until at least n of rec's round trips failed so.
func awaitUnreachable(t *testing.T, rec *redistest.Recorder, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return unreachableTrips(rec) >= n }, wait, poll, "round trips that could not reach Redis")
}

// rideOutCalls are the calls that wait, each on keys "a" and "b".
var rideOutCalls = []struct {
	name string
	// run waits up to timeout for the keys, then gives them back (a lease, Execute) or keeps
	// them (Acquire, as owner "me").
	run func(c context.Context, p *provider.Provider, timeout time.Duration) error
	// kind is what a wait that ends without its keys matches, and msg its message.
	kind error
	msg  string
}{
	{"lease", func(c context.Context, p *provider.Provider, timeout time.Duration) error {
		l, err := p.AcquireLease(c, []string{"a", "b"}, provider.LeaseOptions{Timeout: timeout})
		if err != nil {
			return err
		}
		_, err = l.Release(c)
		return err
	}, provider.ErrTimedOut, timedOutMsg},
	{"execute", func(c context.Context, p *provider.Provider, timeout time.Duration) error {
		return p.Execute(c, []string{"a", "b"}, func(context.Context) error { return nil }, provider.ExecuteOptions{Timeout: timeout})
	}, provider.ErrTimedOut, timedOutMsg},
	{"acquire queued", func(c context.Context, p *provider.Provider, timeout time.Duration) error {
		c, cancel := context.WithTimeout(c, timeout)
		defer cancel()
		return p.Acquire(c, []string{"a", "b"}, provider.AcquireOptions{Owner: "me", AwaitQueue: true, Expire: time.Minute})
	}, provider.ErrNotAcquired, notAcquiredMsg("a")},
}

// A wait started while Redis is down (a crash, a failover) takes its keys once Redis is back
// within its timeout: with go-redis's default client, whose own retries of a call give up
// after about 2 s.
func TestAWaitStartedWhileRedisIsDownRidesItOut(t *testing.T) {
	for _, call := range rideOutCalls {
		t.Run(call.name, func(t *testing.T) {
			t.Parallel()
			srv, err := redisproc.Start(t.Context(), redisproc.Options{Dir: t.TempDir()})
			require.NoError(t, err)
			t.Cleanup(srv.Stop)
			client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
			t.Cleanup(func() { _ = client.Close() })
			failed := &redistest.Recorder{}
			client.AddHook(failed)
			p := locktest.NewProvider(t, client, &provider.Options{Namespace: locktest.Namespace(t), Logger: slog.New(slog.DiscardHandler)})

			restarted := make(chan error, 1)
			// Down longer than go-redis's own retries of a call last (about 2 s), so that the
			// provider sees them fail.
			go func() { restarted <- srv.Restart(t.Context(), 4*time.Second) }()
			require.Eventually(t, func() bool { return !answers(srv.Addr()) }, wait, poll, "the server is down")
			err = call.run(t.Context(), p, 15*time.Second)
			require.NoError(t, <-restarted)
			require.NoError(t, err, "Redis came back within the timeout")
			require.Positive(t, unreachableTrips(failed), "the wait started while Redis was down")

			locks, err := opsOf(p).List(ctx(t))
			require.NoError(t, err)
			if call.kind == provider.ErrNotAcquired {
				require.Len(t, locks, 2, "Acquire keeps its keys")
				for _, l := range locks {
					require.Equal(t, "me", l.Owner)
				}
			} else {
				require.Empty(t, locks, "the lease was released")
			}
		})
	}
}

// answers reports whether a TCP connection to addr is accepted.
func answers(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

// A wait whose Redis never comes back ends at its own timeout (or its context) with the
// conflict it would end with on a held key, stock's message unchanged (a bridge forwards it),
// and says that Redis could not be reached, and why. It retried meanwhile.
func TestAWaitWhoseRedisNeverComesBackSaysSo(t *testing.T) {
	srv := redistest.Start(t)
	srv.Stop()
	for _, call := range rideOutCalls {
		t.Run(call.name, func(t *testing.T) {
			p := fastFail(t, srv, provider.Options{DefaultRetryInterval: 5 * time.Millisecond,
				MaximumRetryInterval: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
			failed := &redistest.Recorder{}
			p.Client().AddHook(failed)
			start := time.Now()
			err := call.run(ctx(t), p, 300*time.Millisecond)
			require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "the wait ends at its timeout, not at a failed dial")
			conflict(t, err, call.kind, call.msg)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			require.NotErrorIs(t, err, provider.ErrOutcomeUnknown, "no attempt reached Redis: nothing can be left behind")
			var down *provider.UnreachableError
			require.ErrorAs(t, err, &down)
			require.ErrorContains(t, down, "Redis could not be reached: ")
			require.ErrorContains(t, down, "connection refused")
			require.Greater(t, unreachableTrips(failed), 1, "the wait tried again")
		})
	}
	// Cancelled rather than timed out: the conflict matches the cancellation, and says why.
	p := fastFail(t, srv, provider.Options{Logger: slog.New(slog.DiscardHandler)})
	failed := &redistest.Recorder{}
	p.Client().AddHook(failed)
	c, cancel := context.WithCancelCause(ctx(t))
	done := make(chan error, 1)
	go func() { done <- p.Acquire(c, []string{"a"}, provider.AcquireOptions{AwaitQueue: true}) }()
	awaitUnreachable(t, failed, 1)
	cancel(errShutdown)
	err := <-done
	conflict(t, err, provider.ErrNotAcquired, notAcquiredMsg("a"))
	require.ErrorIs(t, err, errShutdown)
	require.NotErrorIs(t, err, context.DeadlineExceeded)
	var down *provider.UnreachableError
	require.ErrorAs(t, err, &down)
}

// bareProxiedEnv is proxiedEnv with a client that never resends a command (MaxRetries -1): go-redis
// resends a pipeline after a connection that ended (and keeps at it while new connections end at
// once), which alone would ride out the outages below; this client leaves it to the provider.
func bareProxiedEnv(t *testing.T) (*env, *faultproxy.Proxy) {
	t.Helper()
	px := faultproxy.StartT(t, shared.Addr)
	client := redis.NewClient(&redis.Options{Addr: px.Addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	e := newEnv(t, nil)
	e.PC = client
	e.P = locktest.NewProvider(t, client, &provider.Options{Namespace: e.NS, Logger: slog.New(slog.DiscardHandler),
		MaximumRetryInterval: 20 * time.Millisecond})
	c := ctx(t)
	require.NoError(t, e.P.Acquire(c, []string{"warm-up"}, provider.AcquireOptions{Owner: "warm-up"})) // scripts loaded
	ok, err := e.P.Release(c, []string{"warm-up"}, "warm-up")
	require.NoError(t, err)
	require.True(t, ok)
	return e, px
}

// A wait that rode out an outage and then ends without its keys (one is held past its timeout)
// gives back what it took, and is the plain conflict: Redis answered its last attempt. The
// outage here is a server that closes every new connection (EOF).
func TestAWaitThatRodeOutAnOutageGivesBackWhatItTook(t *testing.T) {
	for _, call := range rideOutCalls {
		t.Run(call.name, func(t *testing.T) {
			e, px := bareProxiedEnv(t)
			failed := &redistest.Recorder{}
			e.PC.AddHook(failed)
			e.Set("b", "holder", 0)
			px.Refuse(true)
			px.CutAll()
			done := make(chan error, 1)
			go func() { done <- call.run(ctx(t), e.P, time.Second) }()
			awaitUnreachable(t, failed, 2)
			px.Refuse(false)
			err := <-done
			conflict(t, err, call.kind, map[error]string{provider.ErrTimedOut: timedOutMsg, provider.ErrNotAcquired: notAcquiredMsg("b")}[call.kind])
			var down *provider.UnreachableError
			require.False(t, errors.As(err, &down), "Redis answered the last attempt: %v", err)
			e.RequireFree("a")
			e.RequireOwner("b", "holder")
		})
	}
}

// An attempt whose reply is lost with its connection, while new connections are refused, may
// have taken its key: the wait keeps it in its holdings and, once Redis answers again, tries it
// again under the same claim, which re-enters what the first run took. The call succeeds holding
// one lock of its own; had it failed, the give-back would have undone both runs.
func TestAWaitRetriesAnAttemptOfUnknownOutcomeUnderItsClaim(t *testing.T) {
	e, px := bareProxiedEnv(t)
	failed := &redistest.Recorder{}
	e.PC.AddHook(failed)
	px.LoseReplyTo([]byte("lost-owner"), func() { px.Refuse(true) })
	done := make(chan error, 1)
	go func() {
		done <- e.P.Acquire(ctx(t), []string{"a"}, provider.AcquireOptions{Owner: "lost-owner", Claim: "claim-1",
			AwaitQueue: true, Expire: time.Minute})
	}()
	awaitUnreachable(t, failed, 2)
	require.Equal(t, 1, px.LostReplies())
	px.Refuse(false)
	require.NoError(t, <-done)
	e.RequireOwner("a", "lost-owner")
	settled, err := e.P.Settle(ctx(t), []string{"a"}, "lost-owner", "claim-1")
	require.NoError(t, err)
	require.True(t, settled, "the lock is the call's own")
	ok, err := e.P.Release(ctx(t), []string{"a"}, "lost-owner")
	require.NoError(t, err)
	require.True(t, ok)
	e.RequireFree("a")
}

// The same, but the wait then ends without its keys ("b" stays held): the give-back undoes the
// re-entry and the first run's take of "a", claim-checked.
func TestAWaitThatFailsAfterAnAttemptOfUnknownOutcomeGivesItBack(t *testing.T) {
	e, px := bareProxiedEnv(t)
	failed := &redistest.Recorder{}
	e.PC.AddHook(failed)
	e.Set("b", "holder", 0)
	px.LoseReplyTo([]byte("lost-owner"), func() { px.Refuse(true) })
	c, cancel := context.WithTimeout(ctx(t), 2*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- e.P.Acquire(c, []string{"a", "b"}, provider.AcquireOptions{Owner: "lost-owner", AwaitQueue: true, Expire: time.Minute})
	}()
	awaitUnreachable(t, failed, 2)
	require.Equal(t, 1, px.LostReplies())
	px.Refuse(false)
	err := <-done
	conflict(t, err, provider.ErrNotAcquired, notAcquiredMsg("b"))
	e.RequireFree("a")
	e.RequireOwner("b", "holder")
}

// While Redis cannot be reached at the end of a wait that may have taken a key, the give-back
// cannot run either: the conflict then also matches ErrOutcomeUnknown, naming the key.
func TestAWaitEndingWhileRedisIsDownAfterAnUnknownOutcomeSaysSo(t *testing.T) {
	e, px := bareProxiedEnv(t)
	failed := &redistest.Recorder{}
	e.PC.AddHook(failed)
	// Every connection goes, idle ones too: the lease's first round trip (the server's run_id)
	// may have left one in the pool beside the one whose reply is lost.
	px.LoseReplyTo([]byte("lost-owner"), func() { px.Refuse(true); px.CutAll() })
	l, err := e.P.AcquireLease(ctx(t), []string{"a"}, provider.LeaseOptions{Owner: "lost-owner", Timeout: time.Second})
	require.Nil(t, l)
	require.Equal(t, 1, px.LostReplies())
	require.ErrorIs(t, err, provider.ErrTimedOut)
	require.ErrorIs(t, err, provider.ErrOutcomeUnknown)
	require.ErrorContains(t, err, `"a"`)
	var ce *provider.ConflictError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, timedOutMsg, ce.Error())
	var down *provider.UnreachableError
	require.ErrorAs(t, err, &down)
	px.Refuse(false)
	e.RequireOwner("a", "lost-owner") // the honest outcome: the first run took it
}

// A server that cannot take writes (a replica, before a failover promotes it) answers every
// attempt READONLY: the wait goes on, and takes its keys once the server is a master.
func TestAWaitRidesOutAReadOnlyReplicaUntilItIsPromoted(t *testing.T) {
	master := redistest.Start(t)
	_, port, err := net.SplitHostPort(master.Addr)
	require.NoError(t, err)
	replica := redistest.StartWith(t, redistest.Config{Args: []string{"--replicaof", "127.0.0.1", port}})
	e := newEnvOn(t, replica, nil)
	failed := &redistest.Recorder{}
	e.PC.AddHook(failed)
	done := make(chan error, 1)
	go func() {
		done <- e.P.Acquire(ctx(t), []string{"a"}, provider.AcquireOptions{Owner: "me", AwaitQueue: true, Expire: time.Minute})
	}()
	awaitUnreachable(t, failed, 1)
	require.NoError(t, e.RDB.Do(ctx(t), "REPLICAOF", "NO", "ONE").Err())
	require.NoError(t, <-done)
	e.RequireOwner("a", "me")
}

// Defect (a fresh clone's make test, e2e TestBridgeAndStockExcludeEachOther): a wait whose own
// timeout cut its last attempt in the middle (go-redis's read deadline is the context's) said
// that Redis could not be reached, and locktui run exited 1 instead of the conflict's code. A
// round trip that the wait's end cut says nothing about Redis.
func TestAWaitCutByItsTimeoutDoesNotSayRedisWasUnreachable(t *testing.T) {
	px := faultproxy.StartT(t, shared.Addr)
	// As redisconn.Open makes every client: the context's deadline is the connection's.
	client := redis.NewClient(&redis.Options{Addr: px.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	e := newEnv(t, nil)
	e.P = locktest.NewProvider(t, client, &provider.Options{Namespace: e.NS, Logger: slog.New(slog.DiscardHandler)})
	warmUpLease(t, e.P) // the run_id is read: the lease's first round trip is its attempt
	e.Set("k", "holder", 0)
	px.Delay(faultproxy.Downstream, 1500*time.Millisecond) // every reply comes after the timeout
	_, err := e.P.AcquireLease(ctx(t), []string{"k"}, provider.LeaseOptions{Timeout: time.Second})
	px.Restore(faultproxy.Downstream)
	require.ErrorIs(t, err, provider.ErrTimedOut)
	var down *provider.UnreachableError
	require.False(t, errors.As(err, &down), "the round trip the timeout cut is not an unreachable Redis: %v", err)
}
