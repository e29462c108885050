package bench_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/bench"
	"github.com/locktui/locktui/internal/testsupport/redistest"
)

// peerCommands is what one uncontended execute of each peer makes Redis run: redislock's obtain
// script (EVALSHA, SET) and release script (EVALSHA, GET, DEL); redsync's SET and delete script
// (EVALSHA, GET, DEL); the bare loop's SET and compare-and-delete script (EVALSHA, GET, DEL).
var peerCommands = map[string]float64{bench.RedislockName: 5, bench.RedsyncName: 4, bench.BareName: 4}

// TestPeersRunThroughRunWithTheirRedisCosts runs the peers through Run (uncontended: the
// contended scenarios run them in TestQuickRunReportsEveryScenarioWithoutOverlaps): the commands
// each execute made Redis run, Redis's CPU, and no key left once every lock was released.
func TestPeersRunThroughRunWithTheirRedisCosts(t *testing.T) {
	srv := redistest.Start(t)
	scenarios, err := bench.SelectScenarios("uncontended_1")
	require.NoError(t, err)
	rep, err := bench.Run(t.Context(), bench.Config{
		RedisURL:  srv.URL,
		Duration:  200 * time.Millisecond,
		Warmup:    bench.QuickWarmup,
		Scenarios: scenarios,
		Impls:     bench.Peers(),
	})
	require.NoError(t, err)
	assert.Empty(t, rep.Problems)
	assert.Equal(t, []string{bench.RedislockName, bench.RedsyncName, bench.BareName}, rep.Settings.Impls)
	require.Len(t, rep.Scenarios, len(peerCommands))
	for _, r := range rep.Scenarios {
		assert.Zero(t, r.Errors, "%s: %s", r.Impl, r.FirstError)
		assert.Positive(t, r.Ops, r.Impl)
		require.NotNil(t, r.KeysLeft, r.Impl)
		assert.Zero(t, *r.KeysLeft, "%s: keys left %v", r.Impl, r.KeysLeftSample)
		assert.NotNil(t, r.RedisCPUMsPer1k, r.Impl)
		require.NotNil(t, r.RedisCmdsPerExec, r.Impl)
		// The window's command count and its executes do not start and end at the same instant:
		// one execute on each edge (one worker) may be counted in one and not the other.
		edges := 2 * peerCommands[r.Impl] / float64(r.Ops)
		assert.InDelta(t, peerCommands[r.Impl], *r.RedisCmdsPerExec, max(0.1, edges), "%s: %v over %d executes", r.Impl, r.RedisCmds, r.Ops)
	}
}
