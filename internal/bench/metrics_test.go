package bench_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/bench"
)

var percentileCases = []struct {
	samples []float64
	p       float64
	want    float64
}{
	{nil, 50, 0},
	{[]float64{7}, 50, 7},
	{[]float64{7}, 99, 7},
	{[]float64{1, 2, 3, 4}, 50, 2},
	{[]float64{1, 2, 3, 4}, 51, 3},
	{[]float64{1, 2, 3, 4}, 100, 4},
	{[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 99, 10},
	{[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 90, 9},
	{[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0.1, 1},
}

func TestPercentileIsNearestRank(t *testing.T) {
	for _, c := range percentileCases {
		if got := bench.Percentile(c.samples, c.p); got != c.want {
			t.Errorf("Percentile(%v, %v) = %v, want %v", c.samples, c.p, got, c.want)
		}
	}
}

var jainCases = []struct {
	counts []int
	want   float64
}{
	{nil, 0},
	{[]int{0, 0}, 0},
	{[]int{5, 5, 5, 5}, 1},
	{[]int{8, 0, 0, 0}, 0.25},
	{[]int{1, 3}, 0.8}, // 16 / (2*10)
}

func TestJain(t *testing.T) {
	for _, c := range jainCases {
		if got := bench.Jain(c.counts); got != c.want {
			t.Errorf("Jain(%v) = %v, want %v", c.counts, got, c.want)
		}
	}
}

func TestSummarizeContended(t *testing.T) {
	sc := bench.Scenario{Name: "contended_2x5ms", Workers: 2, CriticalSection: 5 * time.Millisecond, SharedKey: true}
	spec := bench.Spec{Scenario: sc.Name, Impl: "go", Workers: 2, Keys: []string{"hot"}, CSMs: 5}
	raw := &bench.Raw{
		Completed: []int{30, 10},
		WaitMs:    []float64{4, 1, 3, 2, 100}, // the 100 ms call finished while draining
		HoldMsSum: 240,                        // of the 40 sections counted in the window
		RedisMax:  1,
		WindowMs:  500,
		Runtime:   "go-test",
	}
	r := bench.Summarize(sc, spec, raw)
	assert.Equal(t, "contended", r.Kind)
	assert.Equal(t, 40, r.Ops)
	require.NotNil(t, r.CSPerS)
	assert.InDelta(t, 80, *r.CSPerS, 1e-9)
	assert.InDelta(t, 200, *r.IdealCSPerS, 1e-9)
	assert.InDelta(t, 0.4, *r.Efficiency, 1e-9)
	assert.Equal(t, bench.Quantiles{Count: 5, P50: 3, P99: 100, Max: 100}, *r.WaitMs)
	assert.InDelta(t, 6, *r.HoldMsMean, 1e-9)
	assert.InDelta(t, 0.48, *r.LockBusy, 1e-9) // 240 ms held of 500
	assert.InDelta(t, 0.8, r.Fairness, 1e-9)
	assert.Equal(t, int64(1), *r.RedisMaxInCS)
	assert.Nil(t, r.OpsPerS)
	assert.Nil(t, r.LatencyMs)
}

func TestSummarizeUncontended(t *testing.T) {
	sc := bench.Scenario{Name: "uncontended_1", Workers: 1}
	spec := bench.Spec{Scenario: sc.Name, Impl: "stock", Workers: 1, Keys: []string{"k0"}}
	raw := &bench.Raw{Completed: []int{250}, LatencyMs: []float64{2, 1}, WindowMs: 250}
	r := bench.Summarize(sc, spec, raw)
	assert.Equal(t, "uncontended", r.Kind)
	require.NotNil(t, r.OpsPerS)
	assert.InDelta(t, 1000, *r.OpsPerS, 1e-9)
	assert.Equal(t, bench.Quantiles{Count: 2, P50: 1, P99: 2, Max: 2}, *r.LatencyMs)
	assert.Nil(t, r.CSPerS)
	assert.Nil(t, r.WaitMs)
	assert.Nil(t, r.RedisMaxInCS)
}

func TestRatiosDivideByBaseline(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	results := []bench.Result{
		{Name: "u", Impl: "go", OpsPerS: f(300)},
		{Name: "u", Impl: "stock", OpsPerS: f(100)},
		{Name: "u", Impl: "bridge", OpsPerS: f(50)},
		{Name: "c", Impl: "go", Kind: "contended", CSPerS: f(90), WaitMs: &bench.Quantiles{P50: 1, P99: 10}},
		{Name: "c", Impl: "stock", Kind: "contended", CSPerS: f(60), WaitMs: &bench.Quantiles{P50: 4, P99: 0}},
		{Name: "only_go", Impl: "go", OpsPerS: f(1)},
	}
	got := bench.Ratios(results, "stock")
	want := map[string]map[string]*float64{
		"u": {"go_over_stock": f(3), "bridge_over_stock": f(0.5)},
		"c": {"go_over_stock": f(1.5), "wait_p50_go_over_stock": f(0.25), "wait_p99_go_over_stock": nil}, // baseline 0
	}
	assert.Equal(t, want, got)
}

// sections builds sections from "proc:worker" holders in hand-off order (1 ms apart), shuffled
// by reversing, so CountHandoffs has to sort them.
func sections(holders ...[2]int) []bench.Section {
	out := make([]bench.Section, len(holders))
	for i, h := range holders {
		out[len(holders)-1-i] = bench.Section{StartMs: 1000 + float64(i), Proc: h[0], Worker: h[1]}
	}
	return out
}

var handoffCases = []struct {
	name     string
	sections []bench.Section
	want     map[int]bench.Handoffs
}{
	{"none", nil, map[int]bench.Handoffs{}},
	{"one section, no hand-off", sections([2]int{0, 0}), map[int]bench.Handoffs{}},
	{"the same worker every time", sections([2]int{0, 1}, [2]int{0, 1}, [2]int{0, 1}),
		map[int]bench.Handoffs{0: {Total: 2, SameWorker: 2, SameProcess: 2}}},
	{"round robin in one process", sections([2]int{0, 0}, [2]int{0, 1}, [2]int{0, 0}, [2]int{0, 1}),
		map[int]bench.Handoffs{0: {Total: 3, SameProcess: 3}}},
	{"worker 0 of two processes is two workers", sections([2]int{0, 0}, [2]int{1, 0}, [2]int{1, 0}, [2]int{0, 0}),
		map[int]bench.Handoffs{0: {Total: 1}, 1: {Total: 2, SameWorker: 1, SameProcess: 1}}},
}

func TestCountHandoffsChargesTheReleasingProcess(t *testing.T) {
	for _, c := range handoffCases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, bench.CountHandoffs(c.sections))
		})
	}
}

func TestSameWorkerShare(t *testing.T) {
	assert.Nil(t, bench.Handoffs{}.SameWorkerShare())
	h := bench.Handoffs{Total: 3, SameWorker: 1}.Add(bench.Handoffs{Total: 1, SameWorker: 1, SameProcess: 1})
	assert.Equal(t, bench.Handoffs{Total: 4, SameWorker: 2, SameProcess: 1}, h)
	require.NotNil(t, h.SameWorkerShare())
	assert.Equal(t, 0.5, *h.SameWorkerShare())
}

var jainProcessCases = []struct {
	perProcess [][]int
	want       float64
}{
	{nil, 0},
	{[][]int{{0, 0}, {0, 0}}, 0},
	{[][]int{{5, 5}, {10, 0}}, 1},      // unfair over workers, fair over processes
	{[][]int{{10, 10}, {0, 0}}, 0.5},   // one process of two did everything
	{[][]int{{3}, {1}, {0}, {0}}, 0.4}, // (4)^2 / (4 * 10)
}

func TestJainOverProcessesUsesProcessTotals(t *testing.T) {
	for _, c := range jainProcessCases {
		if got := bench.JainOverProcesses(c.perProcess); got != c.want {
			t.Errorf("JainOverProcesses(%v) = %v, want %v", c.perProcess, got, c.want)
		}
	}
}

var p99TimeoutCases = []struct {
	waits    []float64
	timeouts int
	want     float64
}{
	{nil, 0, 0},
	{nil, 1, 5000},
	{[]float64{1, 2, 3}, 0, 3},
	// 99 fast waits and one timeout: the timeout is the 100th sample, above the p99 rank.
	{append(make([]float64, 99), 0), 0, 0},
	{make([]float64, 99), 1, 0},
	// 98 fast waits and two timeouts: the p99 rank (99th) is a timeout.
	{make([]float64, 98), 2, 5000},
}

func TestP99WithTimeoutsCountsEachTimeoutAsAFullWait(t *testing.T) {
	for _, c := range p99TimeoutCases {
		if got := bench.P99WithTimeouts(c.waits, c.timeouts, 5000); got != c.want {
			t.Errorf("P99WithTimeouts(%d waits, %d timeouts) = %v, want %v", len(c.waits), c.timeouts, got, c.want)
		}
	}
}
