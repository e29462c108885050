package provider_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/provider"
)

// pipelineScripts is a go-redis hook that records the provider scripts of every pipeline sent,
// in order, one entry per pipeline.
type pipelineScripts struct {
	mu  sync.Mutex
	all [][]string
}

func (p *pipelineScripts) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (p *pipelineScripts) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (p *pipelineScripts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var names []string
		for _, cmd := range cmds {
			if c, ok := toCall(cmd); ok {
				names = append(names, c.Script)
			}
		}
		p.mu.Lock()
		p.all = append(p.all, names)
		p.mu.Unlock()
		return next(ctx, cmds)
	}
}

// count returns how many pipelines held exactly the scripts want, in that order.
func (p *pipelineScripts) count(want ...string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, names := range p.all {
		if slices.Equal(names, want) {
			n++
		}
	}
	return n
}

// rideEnv is an env with the fair queue whose waiters retry only when woken (or handed a ride),
// whose releases wait for their rider as long as a test may take, and whose wake-up listener
// stays up: a call waits on "other" all along (stop ends it), so the listener's confirmation,
// which wakes every waiter once, cannot wake a test's waiter while a release offers it a ride.
func rideEnv(t *testing.T, obs *events) (e *env, stop func()) {
	t.Helper()
	e = newEnv(t, &provider.Options{Observer: obs, FairQueue: true, QueueTicketTTL: time.Minute,
		DefaultRetryInterval: time.Minute, MaximumRetryInterval: time.Minute})
	provider.SetRideWait(e.p, wait)
	require.NoError(t, e.p.Acquire(ctx(t), []string{"other"}, provider.AcquireOptions{Owner: "holder"}))
	background := make(chan error, 1)
	go func() {
		background <- e.p.Acquire(ctx(t), []string{"other"}, provider.AcquireOptions{Owner: "background", AwaitQueue: true})
	}()
	require.Eventually(t, func() bool { return provider.WakeupsLive(e.p) && len(obs.of(waiting)) == 1 }, wait, poll)
	return e, func() {
		_, err := e.p.Release(ctx(t), []string{"other"}, "holder")
		require.NoError(t, err)
		require.NoError(t, <-background)
	}
}

// With the fair queue, a release wakes the waiter of its own Provider before it sends the delete,
// and the waiter's attempt goes in the delete's pipeline: the key passes from one call to the
// next in one round trip. The observer still sees the release before the acquisition.
func TestFairQueueHandsTheKeyOnInTheReleasesRoundTrip(t *testing.T) {
	noLeaks(t)
	obs := &events{}
	e, stop := rideEnv(t, obs)
	pipes := &pipelineScripts{}
	e.pc.AddHook(pipes)
	const rounds = 10
	for round := range rounds {
		require.NoError(t, e.p.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: "holder"}))
		done := make(chan error, 1)
		go func() {
			done <- e.p.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: "waiter", AwaitQueue: true})
		}()
		require.Eventually(t, func() bool { return len(obs.of(waiting)) == round+2 }, wait, poll)
		ok, err := e.p.Release(ctx(t), []string{"k"}, "holder")
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, <-done)
		e.requireOwner("k", "waiter")
		ok, err = e.p.Release(ctx(t), []string{"k"}, "waiter")
		require.NoError(t, err)
		require.True(t, ok)
	}
	stop() // its hand-off rides too
	require.Equal(t, rounds+1, pipes.count("release", "acquire"),
		"every hand-off rode the release's pipeline: %v", pipes.all)
	var order []string
	for _, ev := range obs.all {
		if ev.Key == "k" && (ev.Kind == acquired || ev.Kind == released) {
			order = append(order, string(ev.Kind)+":"+ev.Owner)
		}
	}
	want := make([]string, 0, 4*rounds)
	for range rounds {
		want = append(want, "acquired:holder", "released:holder", "acquired:waiter", "released:waiter")
	}
	require.Equal(t, want, order)
	require.Zero(t, provider.PendingWakeups(e.p))
}

// When the reply to a release and its rider is lost (the connection broke after Redis ran
// both), the release reports an unknown outcome and the waiter does not believe it holds the
// key: its call fails, and its give-back frees the key its attempt took.
func TestALostRideReplyLeavesNoHolder(t *testing.T) {
	noLeaks(t)
	obs := &events{}
	e, stop := rideEnv(t, obs)
	defer stop()
	rec := record(e)
	pipes := &pipelineScripts{}
	e.pc.AddHook(pipes)
	require.NoError(t, e.p.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: "holder"}))
	done := make(chan error, 1)
	go func() {
		done <- e.p.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: "waiter", AwaitQueue: true})
	}()
	require.Eventually(t, func() bool { return len(obs.of(waiting)) == 2 }, wait, poll)
	lost := errors.New("read tcp: connection reset by peer")
	rec.setAfter(func(_ context.Context, c scriptCall) error {
		if c.Script == "release" {
			return lost
		}
		return nil
	})
	_, err := e.p.Release(ctx(t), []string{"k"}, "holder")
	require.ErrorIs(t, err, provider.ErrOutcomeUnknown)
	rec.setAfter(nil)
	require.ErrorIs(t, <-done, lost, "the waiter must not believe it holds the key")
	require.Equal(t, 1, pipes.count("release", "acquire"), "the waiter's attempt rode the release: %v", pipes.all)
	e.requireFree("k")
	for _, ev := range obs.of(acquired) {
		require.NotEqual(t, "waiter", ev.Owner, "the waiter was reported as holding the key")
	}
}
