package provider_test

// Replies lost on the socket, below go-redis's own retries (see proxy).

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/locktui/locktui/internal/testsupport/faultproxy"
	"github.com/locktui/locktui/internal/testsupport/locktest"
	"github.com/locktui/locktui/provider"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// proxiedEnv is an env whose provider reaches the shared Redis through a proxy, with go-redis's
// default retries and without context deadlines on socket I/O (the go-redis defaults). The
// scripts are loaded first, so an EVALSHA whose reply is lost has run.
func proxiedEnv(t *testing.T, opts provider.Options) (*env, *faultproxy.Proxy) {
	t.Helper()
	px := faultproxy.StartT(t, shared.Addr)
	client := redis.NewClient(&redis.Options{Addr: px.Addr()})
	t.Cleanup(func() { _ = client.Close() })
	e := newEnv(t, nil)
	opts.Namespace = e.NS
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	e.PC, e.P = client, locktest.NewProvider(t, client, &opts)
	c := ctx(t)
	require.NoError(t, e.P.Acquire(c, []string{"warm-up"}, provider.AcquireOptions{Owner: "warm-up"}))
	ok, err := e.P.Release(c, []string{"warm-up"}, "warm-up")
	require.NoError(t, err)
	require.True(t, ok)
	return e, px
}

// go-redis resends a pipeline whose reply was lost; the second run of acquire.lua then finds the
// key taken by the first one and replies "re-entered". For a call whose owner is its own (a lease
// or Execute), that key was still taken by this call and is given back when the call fails.
func TestLostReplyResentByGoRedisIsGivenBack(t *testing.T) {
	noLeaks(t)
	e, px := proxiedEnv(t, provider.Options{MaximumRetryInterval: 20 * time.Millisecond})
	rec := record(e)
	e.Set("b", "holder", 0)
	px.LoseReplyTo([]byte(shaOf("acquire")), nil)

	_, err := e.P.AcquireLease(ctx(t), []string{"a", "b"}, provider.LeaseOptions{Timeout: 300 * time.Millisecond})
	conflict(t, err, provider.ErrTimedOut, timedOutMsg)
	require.Equal(t, 1, px.LostReplies(), "the first attempt's reply was lost")
	e.RequireFree("a")
	e.RequireOwner("b", "holder")
	owner := rec.of("acquire")[0].Args[0]
	require.NotEmpty(t, rec.of("giveback"))
	for _, c := range rec.of("giveback") {
		require.Equal(t, owner, c.Args[0], "given back under the call's own owner")
	}
}

// The caller's context ends while go-redis waits to resend a pipeline whose reply was lost: the
// call ends with the context error although the script ran, and the key is given back,
// owner-checked. (go-redis v9.23 keeps the first attempt's transport error on the commands, so
// the provider sees a lost reply here; see U9 for a context error reported after the request
// went out.)
func TestContextEndingBeforeTheResendGivesTheKeyBack(t *testing.T) {
	noLeaks(t)
	e, px := proxiedEnv(t, provider.Options{})
	c, cancel := context.WithCancel(ctx(t))
	defer cancel()
	px.LoseReplyTo([]byte(shaOf("acquire")), cancel) // Redis replied; the caller gives up; then the cut

	_, err := e.P.AcquireLease(c, []string{"a"}, provider.LeaseOptions{Timeout: wait})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 1, px.LostReplies())
	e.RequireFree("a")
}
