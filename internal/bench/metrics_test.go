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
		HoldMsSum: 30,
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
