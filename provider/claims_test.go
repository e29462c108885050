package provider_test

// Holder records and claims: a failed acquisition undoes only what it did itself; a delete is
// never resent; a caller that lost a reply learns the truth with Settle.

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/locktui/locktui/internal/testsupport/locktest"
	"github.com/locktui/locktui/provider"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// Defect: a queued Acquire that fails restored the TTL it read before its wait, and so cut short
// a re-entry by the same owner in another process made during that wait: that process believed
// it held the key for 60 s while a third owner could take it at once. A give-back never undoes
// what someone else set after the call's own write, whether that someone writes holder records
// (another process of ours) or not (stock Medusa, simulated with the SET it sends).
func TestFailedQueuedAcquireKeepsALaterReentryBySameOwner(t *testing.T) {
	reentries := map[string]func(e *env){
		"our provider": func(e *env) {
			other := locktest.NewProvider(t, e.PC, &provider.Options{Namespace: e.NS, Logger: slog.New(slog.DiscardHandler)})
			require.NoError(e.T, other.Acquire(ctx(e.T), []string{"a"}, provider.AcquireOptions{Owner: "o", Expire: time.Minute}))
		},
		"stock": func(e *env) {
			require.NoError(e.T, e.RDB.Do(ctx(e.T), "SET", e.Key("a"), "o", "XX", "EX", 60).Err())
		},
	}
	for name, reenter := range reentries {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, &provider.Options{MaximumRetryInterval: 20 * time.Millisecond})
			e.Set("a", "o", 500*time.Millisecond) // the owner's lock, about to expire
			e.Set("b", "other", 0)
			call, cancel := context.WithCancel(ctx(t))
			done := make(chan error, 1)
			go func() {
				done <- e.P.Acquire(call, []string{"a", "b"}, provider.AcquireOptions{Owner: "o", Expire: time.Minute, AwaitQueue: true})
			}()
			// The queued call has re-entered "a" (TTL 60 s) and waits for "b".
			require.Eventually(t, func() bool { return e.ttl("a") > 50 }, wait, poll)
			// A re-entry within 2 ms of the call's own write, with the same TTL, cannot be told
			// from it (see Acquire): on a loaded machine the poll above can see the write that
			// soon.
			time.Sleep(10 * time.Millisecond)
			reenter(e)
			// The owner's original 500 ms have run out by the time the call gives up.
			time.Sleep(600 * time.Millisecond)
			cancel()
			require.ErrorIs(t, <-done, provider.ErrNotAcquired)
			e.RequireOwner("a", "o")
			require.Greater(t, e.ttl("a"), int64(50), "the later re-entry keeps its 60 s")
		})
	}
}

// Without a later re-entry, the same failed call puts the owner's lock back as it was.
func TestFailedQueuedAcquirePutsBackWhatItReentered(t *testing.T) {
	e := newEnv(t, &provider.Options{MaximumRetryInterval: 20 * time.Millisecond})
	e.Set("a", "o", 100*time.Second)
	e.Set("b", "other", 0)
	call, cancel := context.WithTimeout(ctx(t), 200*time.Millisecond)
	defer cancel()
	err := e.P.Acquire(call, []string{"a", "b"}, provider.AcquireOptions{Owner: "o", Expire: time.Minute, AwaitQueue: true})
	require.ErrorIs(t, err, provider.ErrNotAcquired)
	e.RequireOwner("a", "o")
	require.InDelta(t, 100, e.ttl("a"), 1, "the TTL the owner had")
	n, err := e.RDB.Exists(ctx(t), provider.RecordKey(e.Key("a"))).Result()
	require.NoError(t, err)
	require.Zero(t, n, "a lock set without a record gets no record back")
}

// Defect: go-redis resends a pipeline whose reply it lost. For an owner several processes share
// (here "*"), a resent release deleted the lock another process took right after the first run.
// A delete is sent once; its caller learns that the outcome is unknown.
func TestLostReleaseReplyIsNeverResent(t *testing.T) {
	noLeaks(t)
	e, px := proxiedEnv(t, provider.Options{})
	require.NoError(t, e.P.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{}))
	var other sync.WaitGroup
	px.LoseReplyTo([]byte(shaOf("release")), func() {
		// The release ran; before its reply arrives, another process takes the key as "*".
		other.Go(func() {
			require.NoError(t, e.RDB.SetNX(context.Background(), e.Key("k"), "*", 0).Err())
		})
		other.Wait()
	})
	_, err := e.P.Release(ctx(t), []string{"k"}, "")
	require.ErrorIs(t, err, provider.ErrOutcomeUnknown)
	require.Equal(t, 1, px.LostReplies())
	e.RequireOwner("k", "*") // the other process's lock
}

// Defect: an anonymous Acquire whose reply was lost left "*" held forever when go-redis resent
// it (the second run finds "*" held, never re-entrant, and the call reports a conflict). A call
// that reports failure leaves nothing behind.
func TestLostAnonymousAcquireReplyLeavesNothingBehind(t *testing.T) {
	noLeaks(t)
	e, px := proxiedEnv(t, provider.Options{})
	px.LoseReplyTo([]byte(shaOf("acquire")), nil)
	err := e.P.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{})
	require.Equal(t, 1, px.LostReplies())
	if err == nil {
		e.RequireOwner("k", "*") // the caller learned that it holds the key
		return
	}
	require.ErrorIs(t, err, provider.ErrNotAcquired)
	e.RequireFree("k")
}

func TestSettleTellsWhetherAClaimHoldsItsKeys(t *testing.T) {
	e := newEnv(t, nil)
	taken, err := e.P.AcquireTokens(ctx(t), []string{"a", "b"}, provider.AcquireOptions{Owner: "o", Claim: "c1"})
	require.NoError(t, err)

	held, err := e.P.Settle(ctx(t), []string{"b", "a"}, "o", "c1")
	require.NoError(t, err)
	require.True(t, held, "c1 took both keys")
	tokens, err := e.P.SettleTokens(ctx(t), []string{"b", "a"}, "o", "c1")
	require.NoError(t, err)
	require.Equal(t, taken, tokens, "a settled acquisition gets the tokens its grant had")

	held, err = e.P.Settle(ctx(t), []string{"a"}, "o", "c2")
	require.NoError(t, err)
	require.False(t, held, "c2 never ran")
	e.RequireOwner("a", "o") // and c1's lock is untouched

	// A claim that holds only some of its keys (its caller died half-way) is undone.
	require.NoError(t, e.P.Acquire(ctx(t), []string{"c"}, provider.AcquireOptions{Owner: "p", Claim: "c3"}))
	tokens, err = e.P.SettleTokens(ctx(t), []string{"c", "d"}, "p", "c3")
	require.NoError(t, err)
	require.Nil(t, tokens, "not held: no tokens")
	e.RequireFree("c")

	_, err = e.P.Settle(ctx(t), []string{"a"}, "o", "")
	require.ErrorIs(t, err, provider.ErrInvalidArgument)
}

// An acquisition whose reply was lost and that cannot be undone either says that its outcome is
// unknown; one that never reached Redis is a plain error.
func TestAcquireThatCannotBeUndoneReportsUnknownOutcome(t *testing.T) {
	e := newEnv(t, nil)
	rec := record(e)
	lost := errors.New("read tcp: connection reset by peer")
	rec.setAfter(func(_ context.Context, c scriptCall) error {
		if c.Script == "acquire" {
			return lost
		}
		return nil
	})
	rec.setFail(func(_ context.Context, c scriptCall) error {
		if c.Script == "giveback" {
			return lost
		}
		return nil
	})
	err := e.P.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{})
	require.ErrorIs(t, err, provider.ErrOutcomeUnknown)
	require.ErrorContains(t, err, `"k" may still be held by "*"`)

	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	p := locktest.NewProvider(t, client, &provider.Options{Namespace: e.NS, Logger: slog.New(slog.DiscardHandler)})
	_, err = p.Release(ctx(t), []string{"k"}, "")
	require.Error(t, err)
	require.False(t, errors.Is(err, provider.ErrOutcomeUnknown), "a release that never reached Redis did not run: %v", err)
}

// Defect: an acquisition that never reached Redis (nothing listens) was reported as an unknown
// outcome, as if its locks might be held, because its give-back could not reach Redis either.
// A command that was never sent has nothing to undo: the error is the plain Redis error.
func TestAcquireThatNeverReachedRedisHasAKnownOutcome(t *testing.T) {
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { _ = down.Close() })
	p := locktest.NewProvider(t, down, &provider.Options{Logger: slog.New(slog.DiscardHandler)})
	for _, await := range []bool{false, true} {
		err := p.Acquire(ctx(t), []string{"a", "b"}, provider.AcquireOptions{Owner: "o", AwaitQueue: await})
		require.Error(t, err)
		require.NotErrorIs(t, err, provider.ErrOutcomeUnknown, "await_queue %v: %v", await, err)
	}
	_, err := p.AcquireLease(ctx(t), []string{"a"}, provider.LeaseOptions{Timeout: time.Second})
	require.Error(t, err)
	require.NotErrorIs(t, err, provider.ErrOutcomeUnknown)
}

// Defect: an acquisition that failed on a key of another type (WRONGTYPE) reported an unknown
// outcome, since giving back that key failed with WRONGTYPE too; such a key is not a lock and
// holds nothing of the call. The keys it did take are given back.
func TestAcquireFailingOnAKeyOfAnotherTypeHasAKnownOutcome(t *testing.T) {
	e := newEnv(t, nil)
	require.NoError(t, e.RDB.RPush(ctx(t), e.Key("list"), "x").Err())
	err := e.P.Acquire(ctx(t), []string{"a", "list"}, provider.AcquireOptions{Owner: "o", Expire: time.Minute})
	require.Error(t, err)
	require.NotErrorIs(t, err, provider.ErrOutcomeUnknown, "%v", err)
	_, held := e.Owner("a")
	require.False(t, held, "the key the call took is given back")
}

// Abandon stops the renewal and deletes nothing: the keys expire with their TTL.
func TestAbandonedLeaseKeepsItsKeysUntilTheyExpire(t *testing.T) {
	e := newEnv(t, nil)
	l, err := e.P.AcquireLease(ctx(t), []string{"a"}, provider.LeaseOptions{Expire: 2 * time.Second})
	require.NoError(t, err)
	l.Abandon()
	awaitDone(t, l)
	e.RequireOwner("a", l.Owner())
	released, err := l.Release(ctx(t))
	require.NoError(t, err)
	require.False(t, released)
	e.RequireOwner("a", l.Owner())
	require.Eventually(t, func() bool { _, held := e.Owner("a"); return !held }, wait, poll, "the key expires")
}
