// Package locktest is the test environment the provider's and the operator's suites share: a
// Provider and an operator's Inspector in a fresh lock namespace of a redis-server, each on a
// client of its own as two processes would be, a raw client for assertions on the stored keys,
// and those assertions.
package locktest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
)

// Wait bounds every "eventually" of the suites. It only stops a broken test from hanging; no
// test asserts that something is fast.
const Wait = 10 * time.Second

// Poll is the tick of require.Eventually.
const Poll = 5 * time.Millisecond

// Env is one test's view of a Redis.
type Env struct {
	T   *testing.T
	Srv *redistest.Server
	P   *provider.Provider  // takes locks in NS
	PC  *redis.Client       // P's client: hooks on the provider go here
	Ops *operator.Inspector // reads and force-releases in NS, as an operator's tool in another process does
	IC  *redis.Client       // Ops's client: hooks on the Inspector go here
	RDB *redis.Client       // raw client, never hooked
	NS  string
}

// New returns an Env on srv. opts, which may be nil, are the provider's: its Namespace, when
// empty, is a fresh one (Namespace), and its Logger, when nil, logs nothing.
func New(t *testing.T, srv *redistest.Server, opts *provider.Options) *Env {
	t.Helper()
	var o provider.Options
	if opts != nil {
		o = *opts
	}
	if o.Namespace == "" {
		o.Namespace = Namespace(t)
	}
	pc, ic := srv.Client(t), srv.Client(t)
	return &Env{T: t, Srv: srv, P: NewProvider(t, pc, &o), PC: pc,
		Ops: operator.New(ic, &operator.Options{Namespace: o.Namespace}), IC: ic, RDB: srv.Client(t), NS: o.Namespace}
}

// Namespace returns a lock namespace no other test of the process uses.
func Namespace(t testing.TB) string { return redistest.Namespace(t, "t") }

// NewProvider is provider.New, closed when the test ends (its wake-up listener lingers after
// its last lease otherwise: see Provider.Close). opts may be nil; a nil Logger logs nothing.
func NewProvider(t testing.TB, c redis.UniversalClient, opts *provider.Options) *provider.Provider {
	var o provider.Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	p := provider.New(c, &o)
	t.Cleanup(p.Close)
	return p
}

// Ctx returns a test context bounded by Wait, so a broken test fails instead of hanging.
func Ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(t.Context(), Wait)
	t.Cleanup(cancel)
	return c
}

// Key is the Redis key of lock key k.
func (e *Env) Key(k string) string { return e.NS + k }

// Owner returns the stored value of lock key k and whether it exists.
func (e *Env) Owner(k string) (string, bool) {
	e.T.Helper()
	v, err := e.RDB.Get(context.Background(), e.Key(k)).Result()
	if errors.Is(err, redis.Nil) {
		return "", false
	}
	require.NoError(e.T, err)
	return v, true
}

// RequireOwner asserts that lock key k is held by owner.
func (e *Env) RequireOwner(k, owner string) {
	e.T.Helper()
	got, ok := e.Owner(k)
	require.True(e.T, ok, "key %q should be held by %q but is free", k, owner)
	require.Equal(e.T, owner, got, "owner of %q", k)
}

// RequireFree asserts that lock key k does not exist.
func (e *Env) RequireFree(k string) {
	e.T.Helper()
	got, ok := e.Owner(k)
	require.False(e.T, ok, "key %q should be free but is held by %q", k, got)
}

// Set stores a lock the way another process would: SET NS+k owner [PX ttl].
func (e *Env) Set(k, owner string, ttl time.Duration) {
	e.T.Helper()
	require.NoError(e.T, e.RDB.Set(context.Background(), e.Key(k), owner, ttl).Err())
}

// Fill sets n locks "<prefix>NNN" (NNN from 000) owned by owner, without expiry, in one
// pipeline: enough keys for several SCAN batches.
func (e *Env) Fill(prefix, owner string, n int) {
	e.T.Helper()
	pipe := e.RDB.Pipeline()
	for i := range n {
		pipe.Set(context.Background(), e.Key(fmt.Sprintf("%s%03d", prefix, i)), owner, 0)
	}
	_, err := pipe.Exec(context.Background())
	require.NoError(e.T, err)
}

// Token takes key k for owner with p and returns its fencing token.
func (e *Env) Token(p *provider.Provider, k, owner string) int64 {
	e.T.Helper()
	tokens, err := p.AcquireTokens(Ctx(e.T), []string{k}, provider.AcquireOptions{Owner: owner, Expire: time.Minute})
	require.NoError(e.T, err)
	require.Contains(e.T, tokens, k)
	return tokens[k]
}

// Seen reads lock k as the console shows it: the hold an operator decides to force-release.
func (e *Env) Seen(k string) operator.Lock {
	e.T.Helper()
	l, ok, err := e.Ops.Get(Ctx(e.T), k)
	require.NoError(e.T, err)
	require.True(e.T, ok, "%q is held", k)
	return l
}

// StockTake takes lock key k for owner as stock Medusa does: SET key owner NX [EX secs] (0: no
// expiry). Stock writes no holder record and touches none.
func (e *Env) StockTake(k, owner string, secs int) {
	e.T.Helper()
	args := []any{"SET", e.Key(k), owner, "NX"}
	if secs > 0 {
		args = append(args, "EX", secs)
	}
	require.NoError(e.T, e.RDB.Do(context.Background(), args...).Err(), "stock's SET NX of %q", k)
}

// DidRelease is a force-release's outcome as "did it do anything" (Revocation.Done).
func DidRelease(r operator.Revocation, err error) (bool, error) { return r.Done(), err }

// DidReleaseAny is DidRelease for ForceReleaseAny.
func DidReleaseAny(owner string, r operator.Revocation, err error) (string, bool, error) {
	return owner, r.Done(), err
}

// The scenario of an operator's release of an owner's locks (ReleaseAllWith in TellHolderFirst
// mode: the console's D, release-all), which package operator checks for its outcome and package
// provider for what the holders hear.

// HoldPlainAndLease has owner hold "plain" by a plain acquisition and "leased" by a lease of
// e.P, which it returns (released, if still held, when the test ends).
func (e *Env) HoldPlainAndLease(c context.Context, owner string) *provider.Lease {
	e.T.Helper()
	require.NoError(e.T, e.P.Acquire(c, []string{"plain"}, provider.AcquireOptions{Owner: owner, Expire: time.Minute}))
	lease, err := e.P.AcquireLease(c, []string{"leased"}, provider.LeaseOptions{Owner: owner, Expire: 30 * time.Second})
	require.NoError(e.T, err)
	e.T.Cleanup(func() { _, _ = lease.Release(context.Background()) })
	return lease
}

// RequireReleaseAllTellsTheLease releases owner's locks as HoldPlainAndLease left them, telling
// holders first, and asserts the outcome: "plain" freed at once, the lease's holder told and
// "leased" still held by owner until that holder releases it.
func (e *Env) RequireReleaseAllTellsTheLease(c context.Context, owner string) {
	e.T.Helper()
	got := map[string]operator.Revocation{}
	n, err := e.Ops.ReleaseAllWith(c, owner, operator.ScanOptions{}, operator.TellHolderFirst,
		func(l operator.Lock, how operator.Revocation) { got[l.Key] = how })
	require.NoError(e.T, err)
	require.Equal(e.T, 2, n)
	require.Equal(e.T, map[string]operator.Revocation{"plain": operator.Freed, "leased": operator.HolderTold}, got)
	e.RequireFree("plain")
	e.RequireOwner("leased", owner)
}
