package provider_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/testsupport/locktest"
	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/provider"
)

// tripSizes returns the number of commands of each round trip rec saw after its first skip.
func tripSizes(rec *redistest.Recorder, skip int) []int {
	var sizes []int
	for _, c := range rec.Calls() {
		if i := c.Trip - skip - 1; i >= 0 {
			for len(sizes) <= i {
				sizes = append(sizes, 0)
			}
			sizes[i]++
		}
	}
	return sizes
}

// awaitBlockedClients waits until Redis holds at least n commands (paused clients count as blocked).
func awaitBlockedClients(t *testing.T, rdb *redis.Client, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		info, err := rdb.Info(context.Background(), "clients").Result()
		require.NoError(t, err)
		for line := range strings.Lines(info) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "blocked_clients:"); ok {
				got, err := strconv.Atoi(v)
				require.NoError(t, err)
				return got >= n
			}
		}
		return false
	}, wait, 5*time.Millisecond, "Redis never held %d commands", n)
}

// Calls made while the provider's pipelines are all in flight go out together, in one pipeline,
// once one is answered; a call that gives up while it still waits its turn sent nothing, so
// nothing of it reaches Redis later and its error is not an unknown outcome.
func TestConcurrentCallsShareAPipelineAndAQueuedCallThatGivesUpSendsNothing(t *testing.T) {
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: -1, PoolSize: 64, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	sent := &redistest.Recorder{}
	client.AddHook(sent)
	e := newEnvOn(t, srv, nil)
	p := locktest.NewProvider(t, client, &provider.Options{Namespace: e.NS})
	require.NoError(t, p.Acquire(ctx(t), []string{"warm-up"}, provider.AcquireOptions{})) // loads the script
	rdb := srv.Client(t)
	require.NoError(t, rdb.Do(ctx(t), "CLIENT", "PAUSE", "60000", "WRITE").Err())
	var unpause sync.Once
	resume := func() {
		unpause.Do(func() { require.NoError(t, rdb.Do(context.Background(), "CLIENT", "UNPAUSE").Err()) })
	}
	t.Cleanup(resume)

	var wg sync.WaitGroup
	errs := make([]error, 9)
	acquire := func(i int) { errs[i] = p.Acquire(ctx(t), []string{"k" + strconv.Itoa(i)}, provider.AcquireOptions{}) }
	for i := range 4 { // every pipeline in flight, held by the paused server
		wg.Go(func() { acquire(i) })
	}
	awaitBlockedClients(t, rdb, 4)
	giveUp, cancel := context.WithCancel(ctx(t))
	var queuedErr error
	wg.Go(func() { queuedErr = p.Acquire(giveUp, []string{"gave-up"}, provider.AcquireOptions{}) })
	require.Eventually(t, func() bool { return provider.QueuedCalls(p) == 1 }, wait, time.Millisecond)
	cancel()
	require.Eventually(t, func() bool { return provider.QueuedCalls(p) == 0 }, wait, time.Millisecond)
	before := sent.Trips()
	for i := 4; i < 9; i++ {
		wg.Go(func() { acquire(i) })
	}
	require.Eventually(t, func() bool { return provider.QueuedCalls(p) == 5 }, wait, time.Millisecond)
	resume()
	wg.Wait()
	require.ErrorIs(t, queuedErr, context.Canceled)
	require.False(t, errors.Is(queuedErr, provider.ErrOutcomeUnknown), "nothing was sent: %v", queuedErr)
	for i, err := range errs {
		require.NoError(t, err, "acquire k%d", i)
		e.RequireOwner("k"+strconv.Itoa(i), provider.DefaultOwner)
	}
	e.RequireFree("gave-up")
	sizes := tripSizes(sent, before)
	require.Contains(t, sizes, 5, "the five queued calls went out in one pipeline: %v", sizes)
}
