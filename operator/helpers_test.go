package operator_test

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

// wait bounds every "eventually" in the suite. It only stops a broken test from hanging; no test
// asserts that something is fast.
const wait = 10 * time.Second

// poll is the tick of require.Eventually.
const poll = 5 * time.Millisecond

// env is one test's view of a Redis: a provider that takes locks in a fresh namespace, an
// operator's Inspector on the same namespace (each on a client of its own, as two processes
// would be; hooks go on ic) and a raw client for assertions on the stored keys.
type env struct {
	t   *testing.T
	p   *provider.Provider
	ops *operator.Inspector
	ic  *redis.Client // the Inspector's client
	rdb *redis.Client // raw client, never hooked
	ns  string
}

// freshNamespace returns a namespace no other test uses.
func freshNamespace(t *testing.T) string { return redistest.Namespace(t, "op") }

// newEnv returns an env on the shared server in a fresh namespace; opts, which may be nil, are
// the provider's (its Namespace is set to the fresh one).
func newEnv(t *testing.T, opts *provider.Options) *env {
	t.Helper()
	var o provider.Options
	if opts != nil {
		o = *opts
	}
	o.Namespace = freshNamespace(t)
	ic := shared.Client(t)
	return &env{t: t, p: newProvider(t, shared.Client(t), &o), ops: operator.New(ic, &operator.Options{Namespace: o.Namespace}),
		ic: ic, rdb: shared.Client(t), ns: o.Namespace}
}

// newProvider is provider.New, closed when the test ends; opts.Logger defaults to none.
func newProvider(t testing.TB, c redis.UniversalClient, opts *provider.Options) *provider.Provider {
	o := *opts
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	p := provider.New(c, &o)
	t.Cleanup(p.Close)
	return p
}

// ctx returns a test context bounded by wait, so a broken test fails instead of hanging.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), wait)
	t.Cleanup(cancel)
	return c
}

func (e *env) key(k string) string { return e.ns + k }

// owner returns the stored value of lock key k and whether it exists.
func (e *env) owner(k string) (string, bool) {
	e.t.Helper()
	v, err := e.rdb.Get(context.Background(), e.key(k)).Result()
	if errors.Is(err, redis.Nil) {
		return "", false
	}
	require.NoError(e.t, err)
	return v, true
}

// requireOwner asserts that lock key k is held by owner.
func (e *env) requireOwner(k, owner string) {
	e.t.Helper()
	got, ok := e.owner(k)
	require.True(e.t, ok, "key %q should be held by %q but is free", k, owner)
	require.Equal(e.t, owner, got, "owner of %q", k)
}

// requireFree asserts that lock key k does not exist.
func (e *env) requireFree(k string) {
	e.t.Helper()
	got, ok := e.owner(k)
	require.False(e.t, ok, "key %q should be free but is held by %q", k, got)
}

// set stores a lock the way another process would: SET ns+k owner [EX].
func (e *env) set(k, owner string, ttl time.Duration) {
	e.t.Helper()
	require.NoError(e.t, e.rdb.Set(context.Background(), e.key(k), owner, ttl).Err())
}

// fill sets n locks "<prefix>NNN" (NNN from 000) owned by owner, without expiry, in one
// pipeline: enough keys for several SCAN batches.
func (e *env) fill(prefix, owner string, n int) {
	e.t.Helper()
	pipe := e.rdb.Pipeline()
	for i := range n {
		pipe.Set(context.Background(), e.key(fmt.Sprintf("%s%03d", prefix, i)), owner, 0)
	}
	_, err := pipe.Exec(context.Background())
	require.NoError(e.t, err)
}

// token takes key k for owner with p and returns its fencing token.
func (e *env) token(p *provider.Provider, k, owner string) int64 {
	e.t.Helper()
	tokens, err := p.AcquireTokens(ctx(e.t), []string{k}, provider.AcquireOptions{Owner: owner, Expire: time.Minute})
	require.NoError(e.t, err)
	require.Contains(e.t, tokens, k)
	return tokens[k]
}

// seen reads lock k as the console shows it: the hold an operator decides to force-release.
func (e *env) seen(k string) operator.Lock {
	e.t.Helper()
	l, ok, err := e.ops.Get(ctx(e.t), k)
	require.NoError(e.t, err)
	require.True(e.t, ok, "%q is held", k)
	return l
}

// stockTake takes lock key k for owner as stock Medusa does: SET key owner NX [EX secs] (0: no
// expiry). Stock writes no holder record and touches none.
func (e *env) stockTake(k, owner string, secs int) {
	e.t.Helper()
	args := []any{"SET", e.key(k), owner, "NX"}
	if secs > 0 {
		args = append(args, "EX", secs)
	}
	require.NoError(e.t, e.rdb.Do(context.Background(), args...).Err(), "stock's SET NX of %q", k)
}

// didRelease is a force-release's outcome as "did it do anything" (Revocation.Done).
func didRelease(r operator.Revocation, err error) (bool, error) { return r.Done(), err }

// didReleaseAny is didRelease for ForceReleaseAny.
func didReleaseAny(owner string, r operator.Revocation, err error) (string, bool, error) {
	return owner, r.Done(), err
}
