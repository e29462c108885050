package provider_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/testsupport/locktest"
	"github.com/locktui/locktui/provider"
)

// pipelineGate holds back every pipeline that runs acquire.lua on a gated Redis key until its
// gate opens, and records the give-backs that reach Redis, by key. It stays a hook of its own,
// not a redistest.Recorder: it is a barrier rather than a recorder, holding whole pipelines back
// by script and key and telling the test when each arrived, so that the test can order the
// batcher's pipelines in flight.
type pipelineGate struct {
	mu        sync.Mutex
	gates     map[string]chan struct{} // Redis key → closed to let its acquire pipeline through
	arrived   map[string]chan struct{} // Redis key → closed once its acquire pipeline waits
	givenBack map[string]bool
}

func newPipelineGate(keys ...string) *pipelineGate {
	g := &pipelineGate{gates: map[string]chan struct{}{}, arrived: map[string]chan struct{}{}, givenBack: map[string]bool{}}
	for _, k := range keys {
		g.gates[k], g.arrived[k] = make(chan struct{}), make(chan struct{})
	}
	return g
}

func (g *pipelineGate) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (g *pipelineGate) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (g *pipelineGate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			args := cmd.Args()
			if len(args) < 4 {
				continue
			}
			key, _ := args[3].(string)
			switch args[1] {
			case provider.ScriptSHAs["giveback"]:
				g.mu.Lock()
				g.givenBack[key] = true
				g.mu.Unlock()
			case provider.ScriptSHAs["acquire"]:
				if gate := g.gates[key]; gate != nil {
					close(g.arrived[key])
					<-gate
				}
			}
		}
		return next(ctx, cmds)
	}
}

func (g *pipelineGate) sawGiveBack(key string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.givenBack[key]
}

// A call that gives up while its attempt sits in another call's pipeline, not yet written,
// must not give back before that attempt has run: sent first, on another connection, the
// give-back would find nothing to undo, and the attempt then take the key for a call that had
// already failed (a NoExpiry key would stay held for ever). Also when the call's context has a
// deadline close by (a lease's timeout): the wait is not cut at that deadline.
func TestAGiveBackNeverOvertakesTheAttemptItUndoes(t *testing.T) {
	for _, c := range []struct {
		name     string
		deadline time.Duration // of the call's context; 0: none
	}{{"cancelled", 0}, {"cancelled before its deadline", time.Second}} {
		t.Run(c.name, func(t *testing.T) { giveBackAfterItsAttempt(t, c.deadline) })
	}
}

func giveBackAfterItsAttempt(t *testing.T, deadline time.Duration) {
	noLeaks(t)
	ns := locktest.Namespace(t)
	rk := func(k string) string { return ns + k }
	blockers := []string{"b1", "b2", "b3", "b4"} // the batcher's pipelines in flight at once
	gate := newPipelineGate(rk("b1"), rk("b2"), rk("b3"), rk("b4"), rk("v"))
	client := shared.Client(t)
	client.AddHook(gate)
	p := locktest.NewProvider(t, client, &provider.Options{Namespace: ns})
	acquire := func(ctx context.Context, key string) <-chan error {
		done := make(chan error, 1)
		go func() {
			done <- p.Acquire(ctx, []string{key}, provider.AcquireOptions{Owner: key, Expire: provider.NoExpiry})
		}()
		return done
	}
	results := map[string]<-chan error{}
	for _, b := range blockers {
		results[b] = acquire(ctx(t), b)
		<-gate.arrived[rk(b)]
	}
	results["a"] = acquire(ctx(t), "a") // queued: it will lead the next pipeline
	require.Eventually(t, func() bool { return provider.QueuedCalls(p) == 1 }, wait, time.Millisecond)
	victimCtx, giveUp := context.WithCancel(ctx(t))
	if deadline > 0 {
		victimCtx, giveUp = context.WithTimeout(ctx(t), deadline)
	}
	defer giveUp()
	victim := acquire(victimCtx, "v")
	require.Eventually(t, func() bool { return provider.QueuedCalls(p) == 2 }, wait, time.Millisecond)

	close(gate.gates[rk("b1")]) // b1 answered: a runs the next pipeline, with v's attempt in it
	<-gate.arrived[rk("v")]
	giveUp()
	for _, b := range blockers[1:] {
		close(gate.gates[rk(b)]) // slots for the give-back, were it sent now
	}
	require.Never(t, func() bool { return gate.sawGiveBack(rk("v")) }, deadline+300*time.Millisecond, time.Millisecond,
		"the give-back of v reached Redis before v's attempt")
	close(gate.gates[rk("v")])
	select {
	case err := <-victim:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(wait):
		t.Fatal("the call that gave up never returned")
	}
	require.True(t, gate.sawGiveBack(rk("v")), "the attempt may have taken v: it is given back")
	owner, err := shared.Client(t).Get(ctx(t), rk("v")).Result()
	require.ErrorIs(t, err, redis.Nil, "v is held by %q, whose call failed", owner)
	for _, k := range slices.Concat(blockers, []string{"a"}) {
		require.NoError(t, <-results[k], k)
	}
}
