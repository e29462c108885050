package provider_test

import (
	"log/slog"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/testsupport/faultproxy"
	"github.com/locktui/locktui/internal/testsupport/locktest"
	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/provider"
)

// An acquisition whose script ran but whose reply was lost while new connections are refused
// (the chaos run's "link down") may hold its key: it must not report a known failure, which
// would make its caller believe nothing was left behind. A guard: a dial error as the last
// error of a retried command would otherwise read as "never sent".
func TestAcquireCutAfterItRanAndThenRefusedIsNotAKnownFailure(t *testing.T) {
	srv := redistest.Start(t)
	proxy := faultproxy.StartT(t, srv.Addr)
	pc := redis.NewClient(&redis.Options{Addr: proxy.Addr()})
	t.Cleanup(func() { _ = pc.Close() })
	ns := locktest.Namespace(t)
	p := locktest.NewProvider(t, pc, &provider.Options{Namespace: ns, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, p.Acquire(ctx(t), []string{"warm-up"}, provider.AcquireOptions{Owner: "w"})) // scripts loaded
	proxy.LoseReplyTo([]byte("cut-owner"), func() { proxy.Refuse(true) })
	err := p.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: "cut-owner"})
	require.Error(t, err)
	require.Equal(t, 1, proxy.LostReplies(), "the reply was lost: %v", err)
	owner, getErr := srv.Client(t).Get(ctx(t), ns+"k").Result()
	if getErr == nil {
		require.Equal(t, "cut-owner", owner)
		require.ErrorIs(t, err, provider.ErrOutcomeUnknown, "the key is held by the call's owner, yet the call says it failed for sure")
	}
}
