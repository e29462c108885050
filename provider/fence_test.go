package provider_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/locktui/locktui/internal/testsupport/locktest"
	"github.com/locktui/locktui/provider"
	"github.com/stretchr/testify/require"
)

// Every fresh take of a key gets a token above every earlier one, from any provider; a
// re-entry joins the hold and gets its token.
func TestFencingTokensIncreasePerKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	other := locktest.NewProvider(t, e.RDB, &provider.Options{Namespace: e.NS})
	c := ctx(t)
	var last int64
	for i := range 20 {
		p := e.P
		if i%2 == 1 {
			p = other
		}
		tok := e.Token(p, "k", "o"+strconv.Itoa(i))
		require.Greater(t, tok, last, "take %d", i)
		require.Equal(t, tok, e.Token(other, "k", "o"+strconv.Itoa(i)), "a re-entry gets the hold's token")
		last = tok
		ok, err := p.Release(c, []string{"k"}, "o"+strconv.Itoa(i))
		require.NoError(t, err)
		require.True(t, ok)
	}
	// Tokens are the server's time in microseconds (within this test's run).
	now, err := e.RDB.Time(c).Result()
	require.NoError(t, err)
	require.InDelta(t, now.UnixMicro(), last, float64(wait.Microseconds()))
	require.Less(t, last, int64(1)<<53, "exact as a JavaScript number")
}

// The holder record names the process, the hold's start in server time and its token; it
// expires with the lock and goes with it on release. Get returns it.
func TestHolderRecord(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &provider.Options{Holder: provider.Holder{Program: "checkout-worker"}})
	c := ctx(t)
	start := time.Now()
	l, err := e.P.AcquireLease(c, []string{"k"}, provider.LeaseOptions{Expire: 10 * time.Second})
	require.NoError(t, err)
	lock, ok, err := e.Ops.Get(c, "k")
	require.NoError(t, err)
	require.True(t, ok)
	require.NotNil(t, lock.Record)
	host, _ := os.Hostname()
	require.Equal(t, provider.Holder{Host: host, PID: os.Getpid(), Program: "checkout-worker", Client: provider.ClientGo}, lock.Record.Holder)
	require.Equal(t, l.FencingToken(), lock.Record.FencingToken)
	require.WithinDuration(t, start, lock.Record.AcquiredAt, 2*time.Second)
	rk := provider.RecordKey(e.Key("k"))
	require.InDelta(t, e.RDB.PTTL(c, e.Key("k")).Val().Milliseconds(), e.RDB.PTTL(c, rk).Val().Milliseconds(), 5,
		"the record expires with the lock")

	ok, err = l.Release(c)
	require.NoError(t, err)
	require.True(t, ok)
	require.Zero(t, e.RDB.Exists(c, rk).Val(), "released with the lock")

	// A lock taken by stock (a plain SET) has none.
	e.Set("k", "stock", time.Minute)
	lock, _, err = e.Ops.Get(c, "k")
	require.NoError(t, err)
	require.Nil(t, lock.Record)
}

// The default Program is the executable's name; a per-call Holder (a bridge's client) wins.
func TestHolderDefaultsAndOverride(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	c := ctx(t)
	require.NoError(t, e.P.Acquire(c, []string{"a"}, provider.AcquireOptions{Owner: "o"}))
	require.NoError(t, e.P.Acquire(c, []string{"b"}, provider.AcquireOptions{Owner: "o",
		Holder: provider.Holder{Host: "web-1", PID: 42, Program: "medusa", Client: provider.ClientBridge}}))
	locks, _, err := e.Ops.Read(c, []string{"a", "b"})
	require.NoError(t, err)
	exe, err := os.Executable()
	require.NoError(t, err)
	require.Equal(t, filepath.Base(exe), locks[0].Record.Program)
	require.Equal(t, provider.Holder{Host: "web-1", PID: 42, Program: "medusa", Client: provider.ClientBridge}, locks[1].Record.Holder)
}

// Execute's job reads the lease's token from its ctx.
func TestExecuteJobReadsItsFencingToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	c := ctx(t)
	_, ok := provider.FencingToken(c)
	require.False(t, ok, "no token outside a job")
	var got int64
	var all map[string]int64
	require.NoError(t, e.P.Execute(c, []string{"x", "y"}, func(ctx context.Context) error {
		got, ok = provider.FencingToken(ctx)
		all = provider.FencingTokens(ctx)
		lock, _, err := e.Ops.Get(ctx, "x")
		require.NoError(t, err)
		require.Equal(t, lock.Record.FencingToken, got)
		return nil
	}, provider.ExecuteOptions{}))
	require.True(t, ok)
	require.Equal(t, got, all["x"])
	require.Positive(t, all["y"])
}

// A re-entry of ours under an owner shared with stock, after a stock process released our hold
// and took the key again (leaving our record behind), does not join our ended hold: it is a new
// hold, with a new token above the old one and a fresh record. A give-back of such a re-entry
// leaves stock's lock as it was, without a record. A re-entry of our own live hold still joins
// it (TestFencingTokensIncreasePerKey).
func TestAReentryAfterAStockRetakeIsANewHold(t *testing.T) {
	for _, owner := range []string{"w", "shared-svc"} {
		t.Run(owner, func(t *testing.T) {
			e := newEnv(t, &provider.Options{MaximumRetryInterval: 20 * time.Millisecond})
			c := ctx(t)
			old := e.Token(e.P, "k", owner)
			oldRec, _, err := e.Ops.HolderRecord(c, "k")
			require.NoError(t, err)
			time.Sleep(5 * time.Millisecond) // so that a new hold's since differs
			require.NoError(t, e.RDB.Del(c, e.Key("k")).Err())
			e.StockTake("k", owner, 30)

			// A failed re-entry (with a busy key) gives stock's lock back as it was.
			stockAt := e.RDB.PExpireTime(c, e.Key("k")).Val()
			e.Set("busy", "other", time.Minute)
			call, cancel := context.WithTimeout(c, 100*time.Millisecond)
			defer cancel()
			err = e.P.Acquire(call, []string{"k", "busy"}, provider.AcquireOptions{Owner: owner, Expire: time.Minute})
			require.ErrorIs(t, err, provider.ErrNotAcquired)
			e.RequireOwner("k", owner)
			require.Equal(t, stockAt, e.RDB.PExpireTime(c, e.Key("k")).Val(), "stock's expiry is put back")
			e.requireNoRecord("k")

			tok := e.Token(e.P, "k", owner)
			require.Greater(t, tok, old, "a new hold gets a new token")
			l, ok, err := e.Ops.Get(c, "k")
			require.NoError(t, err)
			require.True(t, ok)
			require.NotNil(t, l.Record, "the re-entry wrote a fresh record")
			require.Equal(t, tok, l.Record.FencingToken)
			require.True(t, l.Record.AcquiredAt.After(oldRec.Hold.AcquiredAt), "the hold begins at the re-entry")

			require.Equal(t, tok, e.Token(e.P, "k", owner), "a re-entry of this live hold joins it")
		})
	}
}

// A stock process that renews a live hold of ours under a shared owner moves the lock's expiry
// and not the record's. A re-entry of ours that then fails (a busy key) puts the record back as
// it was, with its own expiry, instead of deleting it: the record of our live lock is not lost
// (found in review: the give-back deleted it, and no renewal could bring it back).
func TestAFailedReentryAfterAStockRenewalKeepsOurRecord(t *testing.T) {
	e := newEnv(t, &provider.Options{MaximumRetryInterval: 20 * time.Millisecond})
	c := ctx(t)
	const owner = "shared-svc"
	require.NoError(t, e.P.Acquire(c, []string{"k"}, provider.AcquireOptions{Owner: owner, Expire: time.Minute}))
	rk := provider.RecordKey(e.Key("k"))
	require.NoError(t, e.RDB.Do(c, "SET", e.Key("k"), owner, "XX", "EX", 30).Err()) // stock's renewal
	recAt := e.RDB.PExpireTime(c, rk).Val()
	fields := e.RDB.Get(c, rk).Val()
	require.NotEmpty(t, fields)

	e.Set("busy", "other", time.Minute)
	call, cancel := context.WithTimeout(c, 100*time.Millisecond)
	defer cancel()
	err := e.P.Acquire(call, []string{"k", "busy"}, provider.AcquireOptions{Owner: owner, Expire: time.Minute})
	require.ErrorIs(t, err, provider.ErrNotAcquired)
	e.RequireOwner("k", owner)
	require.Equal(t, fields, e.RDB.Get(c, rk).Val(), "the record is put back as it was")
	require.Equal(t, recAt, e.RDB.PExpireTime(c, rk).Val(), "with its own expiry")
}

// A holder record's fields are whatever was written to Redis: the process they name reaches the
// operator's terminal (console, dialog, audit) with every field escaped.
func TestHolderStringEscapesEveryField(t *testing.T) {
	h := provider.Holder{Host: "web\x1b[2J", PID: 7, Program: "svc\n", Client: "go\x1b]52;c;x\a"}
	require.Equal(t, `"svc\n" (pid 7 on "web\x1b[2J", "go\x1b]52;c;x\a" client)`, h.String())
	require.Equal(t, "medusa-worker (pid 4242 on web-1, bridge client)",
		provider.Holder{Host: "web-1", PID: 4242, Program: "medusa-worker", Client: provider.ClientBridge}.String())
}
