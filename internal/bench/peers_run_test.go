package bench_test

import (
	"maps"
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
var peerCommands = map[string]map[string]float64{
	bench.RedislockName: {"evalsha": 2, "set": 1, "get": 1, "del": 1},
	bench.RedsyncName:   {"evalsha": 1, "set": 1, "get": 1, "del": 1},
	bench.BareName:      {"evalsha": 1, "set": 1, "get": 1, "del": 1},
}

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
		// Every execute runs the same commands, so each command's calls per execute are the
		// same fraction of the peer's (its composition), however many executes Redis's counters
		// missed: the first counters are read by a goroutine woken at the window's opening, which
		// a busy machine wakes late, after the first executes (8 % of a 200 ms window was seen).
		// The level is bounded above by one execute on each edge of the window and below by that
		// fraction.
		want := peerCommands[r.Impl]
		total := 0.0
		for _, n := range want {
			total += n
		}
		require.Contains(t, r.RedisCmds, "set", "%s: %v", r.Impl, r.RedisCmds)
		fraction := r.RedisCmds["set"] / want["set"]
		names := maps.Clone(want)
		maps.Copy(names, r.RedisCmds)
		for name := range names {
			assert.InDelta(t, want[name]*fraction, r.RedisCmds[name], 0.02, "%s: %s in %v over %d executes", r.Impl, name, r.RedisCmds, r.Ops)
		}
		edge := total / float64(r.Ops)
		assert.LessOrEqual(t, *r.RedisCmdsPerExec, total+2*edge, "%s: %v over %d executes", r.Impl, r.RedisCmds, r.Ops)
		assert.Greater(t, fraction, 0.5, "%s: Redis counted most of the window's executes: %v over %d", r.Impl, r.RedisCmds, r.Ops)
	}
}
