package bench_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/locktui/locktui/internal/bench"
	"github.com/locktui/locktui/internal/nodeproc"
	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/provider"
)

func TestMain(m *testing.M) {
	if bench.IsWorker() { // a Go worker process of a multi-process scenario
		os.Exit(bench.WorkerMain())
	}
	goleak.VerifyTestMain(m)
}

// compatDir returns the repository's compat/ directory and fails (never skips) when node or the
// Node dependencies are missing.
func compatDir(t *testing.T) string {
	t.Helper()
	_, err := nodeproc.LookPath()
	require.NoError(t, err)
	dir, err := nodeproc.FindCompatDir(".")
	require.NoError(t, err)
	require.NoError(t, nodeproc.CheckDeps(dir, "@medusajs/locking-redis"))
	return dir
}

// TestQuickRunReportsEveryScenarioWithoutOverlaps runs the whole benchmark in --quick mode
// (Go in-process, stock Medusa in Node, the bridge client in Node through a bridge built for
// the run) and checks the report's shape and its correctness checks; speed is not judged.
func TestQuickRunReportsEveryScenarioWithoutOverlaps(t *testing.T) {
	dir := compatDir(t)
	srv := redistest.Start(t)
	var log strings.Builder
	rep, err := bench.Run(t.Context(), bench.Config{
		RedisURL:      srv.URL,
		CompatDir:     dir,
		Duration:      bench.QuickDuration,
		MultiDuration: bench.QuickDuration,
		Warmup:        bench.QuickWarmup,
		Log:           &log,
	})
	require.NoError(t, err, "log:\n%s", log.String())
	assert.Empty(t, rep.Problems)
	assert.NotEmpty(t, rep.Redis)
	assert.Equal(t, rep.Redis, rep.Env.Redis)
	impls := []string{"go", "stock", "bridge", bench.RedislockName, bench.RedsyncName, bench.BareName}
	assert.Equal(t, impls, rep.Settings.Impls)
	assert.Equal(t, "2.21.2", rep.Env.Packages["@medusajs/locking-redis"])
	assert.NotEmpty(t, rep.Env.Packages["@locktui/medusa-locking-bridge"])
	assert.True(t, strings.HasPrefix(rep.Env.Node, "v"), "node version %q", rep.Env.Node)

	scenarios := bench.DefaultScenarios()
	require.Len(t, rep.Scenarios, len(impls)*len(scenarios))
	for i, r := range rep.Scenarios {
		sc := scenarios[i/len(impls)]
		assert.Equal(t, sc.Name, r.Name)
		assert.Equal(t, impls[i%len(impls)], r.Impl)
		assert.Equal(t, sc.Workers, r.Workers)
		assert.Zero(t, r.Overlaps, "%s/%s", r.Name, r.Impl)
		assert.Zero(t, r.Errors, "%s/%s: %s", r.Name, r.Impl, r.FirstError)
		// Every worker calls execute at least once; only a timeout leaves no sample.
		samples := 0
		if sc.SharedKey {
			require.NotNil(t, r.RedisMaxInCS, "%s/%s", r.Name, r.Impl)
			require.NotNil(t, r.WaitMs)
			require.NotNil(t, r.CSPerS)
			assert.Nil(t, r.OpsPerS)
			samples = r.WaitMs.Count
			if samples > 0 {
				assert.Equal(t, int64(1), *r.RedisMaxInCS, "%s/%s: Redis counter", r.Name, r.Impl)
			}
		} else {
			require.NotNil(t, r.LatencyMs)
			require.NotNil(t, r.OpsPerS)
			assert.Nil(t, r.CSPerS)
			samples = r.LatencyMs.Count
		}
		assert.GreaterOrEqual(t, samples+r.Timeouts, sc.Workers, "%s/%s", r.Name, r.Impl)
		assert.GreaterOrEqual(t, samples, r.Ops, "%s/%s", r.Name, r.Impl)
		for _, impl := range impls[1:] {
			if impl != "stock" {
				assert.Contains(t, rep.Ratios[sc.Name], impl+"_over_stock", "ratio of %s", sc.Name)
			}
		}
		// The Redis server's side of every row: its CPU and commands per execute, the keys left.
		assert.NotNil(t, r.RedisCPUMsPer1k, "%s/%s", r.Name, r.Impl)
		require.NotNil(t, r.RedisCmdsPerExec, "%s/%s", r.Name, r.Impl)
		assert.GreaterOrEqual(t, *r.RedisCmdsPerExec, 2.0, "%s/%s: %v", r.Name, r.Impl, r.RedisCmds)
		assert.NotNil(t, r.KeysLeft, "%s/%s", r.Name, r.Impl)
	}

	// The JSON document has the documented top-level shape.
	data, err := json.Marshal(rep)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(data, &doc))
	for _, key := range []string{"redis", "env", "settings", "scenarios", "ratios", "metrics_doc", "problems"} {
		assert.Contains(t, doc, key)
	}
	first := doc["scenarios"].([]any)[0].(map[string]any)
	for _, key := range []string{"name", "impl", "ops_per_s", "latency_ms", "fairness", "overlaps"} {
		assert.Contains(t, first, key)
	}
	assert.Contains(t, log.String(), "contended_32x5ms")
	// Every multi-process scenario has a row per implementation, and a mixed one an "all"
	// row; the processes shared the key without overlapping.
	rows := map[string][]bench.Result{}
	for _, r := range rep.MultiProcess {
		rows[r.Name] = append(rows[r.Name], r)
		assert.Zero(t, r.Overlaps, "%s/%s", r.Name, r.Impl)
		require.NotNil(t, r.RedisMaxInCS, "%s/%s", r.Name, r.Impl)
		assert.LessOrEqual(t, *r.RedisMaxInCS, int64(1), "%s/%s", r.Name, r.Impl)
		require.NotNil(t, r.Handoffs, "%s/%s", r.Name, r.Impl)
		require.NotNil(t, r.FairnessProcesses, "%s/%s", r.Name, r.Impl)
		require.NotNil(t, r.WaitP99TimeoutsMs, "%s/%s", r.Name, r.Impl)
		assert.GreaterOrEqual(t, *r.WaitP99TimeoutsMs, r.WaitMs.P99, "%s/%s", r.Name, r.Impl)
		assert.Positive(t, r.Processes, "%s/%s", r.Name, r.Impl)
	}
	bridgeProcesses := 0
	for _, m := range bench.DefaultMultiScenarios() {
		impls := map[string]bool{}
		for _, p := range m.Processes {
			impls[p] = true
			if p == bench.BridgeName {
				bridgeProcesses++
			}
		}
		want := len(impls)
		if want > 1 {
			want++ // the "all" row
		}
		require.Len(t, rows[m.Name], want, m.Name)
		last := rows[m.Name][want-1]
		assert.Equal(t, len(m.Processes), last.Processes, m.Name)
		assert.Equal(t, len(m.Processes)*m.Workers, last.Workers, m.Name)
		require.NotNil(t, last.Share, m.Name)
		assert.Equal(t, 1.0, *last.Share, m.Name)
		assert.NotNil(t, last.RedisCmdsPerExec, m.Name)
		assert.NotNil(t, last.KeysLeft, m.Name)
		if want > 1 {
			assert.Nil(t, rows[m.Name][0].RedisCmdsPerExec, "%s: one implementation's row of a mixed scenario", m.Name)
		}
	}
	assert.Contains(t, rep.Ratios["multi_go"], "go_over_stock")
	assert.Contains(t, rep.Ratios["multi_go_stock"], "stock_over_all_stock")
	assert.Contains(t, rep.Ratios["multi_bridge_stock"], "bridge_over_stock")
	for _, r := range rep.MultiProcess {
		if r.Impl == bench.BridgeName {
			assert.NotNil(t, r.CPUMsPer1k, "%s/%s: client CPU", r.Name, r.Impl)
		}
	}

	// The cluster run: Go and the bridge (through a bridge of its own on the cluster), with the
	// reason stock is left out.
	clusterImpls := []string{"go", bench.BridgeName}
	require.Len(t, rep.Cluster, len(clusterImpls)*len(bench.DefaultClusterScenarios()))
	for i, r := range rep.Cluster {
		assert.Equal(t, clusterImpls[i%len(clusterImpls)], r.Impl)
		assert.Zero(t, r.Overlaps, r.Name)
		assert.Zero(t, r.Errors, "%s: %s", r.Name, r.FirstError)
		if r.RedisMaxInCS != nil && r.WaitMs.Count > 0 {
			assert.Equal(t, int64(1), *r.RedisMaxInCS, "%s/%s", r.Name, r.Impl)
		}
		key := r.Impl + "_over_" + r.Impl + "_standalone"
		assert.Contains(t, rep.Ratios[r.Name], key, r.Name)
		// The cluster's three masters are read and summed.
		assert.NotNil(t, r.RedisCPUMsPer1k, "%s/%s", r.Name, r.Impl)
		assert.NotNil(t, r.RedisCmdsPerExec, "%s/%s", r.Name, r.Impl)
		assert.NotNil(t, r.KeysLeft, "%s/%s", r.Name, r.Impl)
	}
	assert.NotEmpty(t, rep.ClusterNotes)

	// The table has a row per result.
	var table strings.Builder
	require.NoError(t, bench.WriteTable(&table, rep))
	assert.Equal(t, len(rep.Scenarios)+len(rep.MultiProcess)+len(rep.Cluster), strings.Count(table.String(), "\n| "), table.String())

	// One bridge served every bridge runner on the single server (a connection per scenario and
	// process), another the cluster's; both were stopped gracefully at the end.
	opened := len(scenarios) + bridgeProcesses + len(bench.DefaultClusterScenarios())
	assert.Equal(t, opened, strings.Count(log.String(), `"msg":"connection opened"`), "log:\n%s", log.String())
	assert.Equal(t, 2, strings.Count(log.String(), `"msg":"stopped"`))
}

func TestNodeImplNamesTheMissingDependencies(t *testing.T) {
	_, err := nodeproc.LookPath()
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "bench"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bench", "x.js"), nil, 0o644))
	_, err = bench.NodeImpl{ImplName: "x", Script: "bench/x.js"}.Open(t.Context(), bench.Env{CompatDir: dir})
	require.Error(t, err)
	assert.True(t, errors.Is(err, nodeproc.ErrDeps), "%v", err)
	assert.Contains(t, err.Error(), "make node-deps")

	_, err = bench.NodeImpl{ImplName: "x", Script: "bench/missing.js"}.Open(t.Context(), bench.Env{CompatDir: dir})
	assert.ErrorContains(t, err, "runner script missing")
}

func TestRunFailsOnAnUnreachableRedis(t *testing.T) {
	srv := redistest.Start(t)
	srv.Stop()
	url := srv.URL + "?max_retries=-1" // fail at once instead of retrying with backoff
	_, err := bench.Run(t.Context(), bench.Config{RedisURL: url, Impls: []bench.Impl{bench.GoImpl{}}})
	assert.ErrorContains(t, err, "does not answer")
}

// noLock is an executor that does not lock: it runs the job at once.
type noLock struct{}

func (noLock) Execute(ctx context.Context, _ []string, job func(context.Context) error, _ provider.ExecuteOptions) error {
	return job(ctx)
}

// TestOverlapDetectorsCatchALockThatDoesNotLock runs the contended scenario with a Go and a
// Node "lock" that lets every job in: both detectors must see overlaps and Run must report
// them as problems.
func TestOverlapDetectorsCatchALockThatDoesNotLock(t *testing.T) {
	dir := compatDir(t)
	srv := redistest.Start(t)
	scenarios, err := bench.SelectScenarios("contended_8x1ms")
	require.NoError(t, err)
	rep, err := bench.Run(t.Context(), bench.Config{
		RedisURL:  srv.URL,
		CompatDir: dir,
		Duration:  50 * time.Millisecond,
		Warmup:    -1,
		Scenarios: scenarios,
		Impls: []bench.Impl{
			bench.GoImpl{ImplName: "nolock-go", Wrap: func(*provider.Provider) bench.Executor { return noLock{} }},
			bench.NodeImpl{ImplName: "nolock-node", Script: "bench/testdata/nolock-bench.js", Requires: []string{"ioredis"}},
		},
	})
	require.NoError(t, err)
	require.Len(t, rep.Scenarios, 2)
	for _, r := range rep.Scenarios {
		assert.Positive(t, r.Overlaps, r.Impl)
		require.NotNil(t, r.RedisMaxInCS, r.Impl)
		assert.Greater(t, *r.RedisMaxInCS, int64(1), r.Impl)
	}
	problems := strings.Join(rep.Problems, "\n")
	assert.Contains(t, problems, "contended_8x1ms/nolock-go: ")
	assert.Contains(t, problems, "contended_8x1ms/nolock-node: ")
	assert.Contains(t, problems, "overlapping critical sections")
	assert.Contains(t, problems, "Redis counter reached")
}

// fakeImpl is an implementation whose Open is given by the test.
type fakeImpl struct {
	name string
	open func(ctx context.Context) (bench.Runner, error)
}

func (f fakeImpl) Name() string { return f.name }

func (f fakeImpl) Open(ctx context.Context, _ bench.Env) (bench.Runner, error) { return f.open(ctx) }

// closeCounter is a runner that counts its Close calls.
type closeCounter struct{ closed atomic.Int32 }

func (c *closeCounter) Run(context.Context, bench.Spec) (*bench.Raw, error) {
	return nil, errors.New("not expected to run")
}

func (c *closeCounter) Close() error { c.closed.Add(1); return nil }

// TestRunCutsOtherStartUpsShortWhenOneFails opens three implementations at once: one opens, one
// fails, one waits for its context. Run must report the failure, end the waiting start-up
// instead of waiting it out, and close the one that opened.
func TestRunCutsOtherStartUpsShortWhenOneFails(t *testing.T) {
	srv := redistest.Start(t)
	opened := &closeCounter{}
	boom := errors.New("boom: cannot start")
	_, err := bench.Run(t.Context(), bench.Config{
		RedisURL: srv.URL,
		Impls: []bench.Impl{
			fakeImpl{name: "slow", open: func(ctx context.Context) (bench.Runner, error) {
				<-ctx.Done()
				return nil, context.Cause(ctx)
			}},
			fakeImpl{name: "ok", open: func(context.Context) (bench.Runner, error) { return opened, nil }},
			fakeImpl{name: "broken", open: func(context.Context) (bench.Runner, error) { return nil, boom }},
		},
	})
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, int32(1), opened.closed.Load(), "the opened runner was not closed once")
}

// TestNodeWindowFollowsTheSystemClock runs a Node runner whose performance.timeOrigin is a
// minute stale (as after a clock step since it started) with a window opening 200 ms from now:
// it must open on time by the system clock, not a minute later or a minute early.
func TestNodeWindowFollowsTheSystemClock(t *testing.T) {
	dir := compatDir(t)
	srv := redistest.Start(t)
	impl := bench.NodeImpl{ImplName: "stale-origin", Script: "bench/testdata/stale-origin-bench.js", Requires: []string{"ioredis"}}
	runner, err := impl.Open(t.Context(), bench.Env{RedisURL: srv.URL, CompatDir: dir, Log: io.Discard})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, runner.Close()) })

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	startAt := time.Now().Add(200 * time.Millisecond)
	raw, err := runner.Run(ctx, bench.Spec{
		Scenario: "stale_origin", Impl: "stale-origin", Workers: 1, Keys: []string{"stale_origin:k"},
		DurationMs: 50, TimeoutS: 5, ExpireS: 5, RedisURL: srv.URL,
		StartAtUnixMs: float64(startAt.UnixMicro()) / 1000,
	})
	require.NoError(t, err, "the runner did not open its window on time by the system clock")
	opened := time.UnixMicro(int64(raw.WindowStartUnixMs * 1000))
	assert.WithinDuration(t, startAt, opened, 5*time.Second, "window dated by a stale clock")
	assert.False(t, opened.Before(startAt.Add(-time.Millisecond)), "window opened at %v, before %v", opened, startAt)
	assert.Zero(t, raw.StartLateMs)
}

// TestHoldsCountOnlyTheSectionsCompletedInTheWindow runs 4 workers × 30 ms on one key in a
// 50 ms window with the Go and the stock runner: every worker makes its first call, so three
// sections end while draining. The holds that Raw sums must be those of the sections counted in
// the window (at least 30 ms each), and one key's holds inside a window never add up to more
// than the window.
func TestHoldsCountOnlyTheSectionsCompletedInTheWindow(t *testing.T) {
	dir := compatDir(t)
	srv := redistest.Start(t)
	for _, impl := range []bench.Impl{bench.GoImpl{ImplName: "go"}, bench.NodeImpl{ImplName: "stock", Script: "bench/stock-bench.js"}} {
		t.Run(impl.Name(), func(t *testing.T) {
			runner, err := impl.Open(t.Context(), bench.Env{RedisURL: srv.URL, CompatDir: dir, Log: io.Discard})
			require.NoError(t, err)
			t.Cleanup(func() { assert.NoError(t, runner.Close()) })
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			name := "held_" + impl.Name()
			raw, err := runner.Run(ctx, bench.Spec{
				Scenario: name, Impl: impl.Name(), Workers: 4, Keys: []string{name + ":k"}, CSMs: 30,
				DurationMs: 50, TimeoutS: 5, ExpireS: 5, RedisURL: srv.URL,
				Namespace: bench.Namespace(impl.Name()), CounterKey: name + ":in",
			})
			require.NoError(t, err)
			counted := 0
			for _, c := range raw.Completed {
				counted += c
			}
			require.GreaterOrEqual(t, len(raw.WaitMs), 4, "every worker's first call succeeds")
			require.Less(t, counted, 4, "a 50 ms window has no room for four 30 ms sections")
			assert.GreaterOrEqual(t, raw.HoldMsSum, 30*float64(counted)-1)
			assert.LessOrEqual(t, raw.HoldMsSum, raw.WindowMs, "holds of sections that ended while draining were counted")
		})
	}
}
