package source

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/budget"
	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/operator"
)

type discardSink struct{}

func (discardSink) Observe([]operator.Lock, time.Time, uint64) {}
func (discardSink) EndScan(uint64, time.Time)                  {}
func (discardSink) Absent([]string, time.Time)                 {}

// A database that holds far more than locks: SCAN … MATCH walks all of it, and the budget must
// count that walk (each SCAN examines ~COUNT keys), not one command per SCAN.
func TestScanOfALargeDatabaseStaysWithinTheBudget(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	ctx := t.Context()
	const other, locks = 20000, 6
	for start := 0; start < other; start += 1000 {
		pairs := make([]any, 0, 2000)
		for i := start; i < start+1000; i++ {
			pairs = append(pairs, fmt.Sprintf("app:session:%06d", i), "x")
		}
		require.NoError(t, client.MSet(ctx, pairs...).Err())
	}
	for i := 0; i < locks; i++ {
		require.NoError(t, client.Set(ctx, fmt.Sprintf("medusa_lock:cart:%d", i), "o", time.Minute).Err())
	}
	dbsize, err := client.DBSize(ctx).Result()
	require.NoError(t, err)

	hook := &redistest.Recorder{}
	client.AddHook(hook)
	const perSecond = 2000
	src := New(Options{Client: client, Budget: perSecond})
	clk := budget.UseVirtualClock(src.limiter)
	st, err := src.Scan(ctx, discardSink{})
	require.NoError(t, err)
	require.Equal(t, locks, st.Locks)

	scans, reads := hook.Count("scan"), hook.Count("get")+hook.Count("pttl")
	assert.Equal(t, operator.ReadsPerKey*locks, reads)
	assert.Equal(t, scans, st.Scans)
	assert.Equal(t, scans*ScanCount+reads, st.Cost, "every SCAN is charged the keys it examines")
	assert.Equal(t, int64(st.Cost), src.limiter.Charged(), "the whole cost went through the budget")
	assert.GreaterOrEqual(t, float64(scans*ScanCount), 0.9*float64(dbsize),
		"the SCANs of one refresh walk the whole database (%d keys in %d SCANs)", dbsize, scans)

	// What Redis did for the refresh (every key examined once, plus the reads), per second of
	// the refresh as paced by the budget, stays within the budget: beyond the first burst the
	// refresh had to wait for every unit it was charged.
	elapsed := clk.Elapsed().Seconds()
	require.Positive(t, elapsed, "a refresh that examines %d keys must wait for the budget", dbsize)
	burst := float64(perSecond) / 10
	work := float64(dbsize) + float64(reads)
	assert.LessOrEqual(t, (work-burst)/elapsed, float64(perSecond)*1.05,
		"keys examined + reads = %.0f in %.2fs of budget", work, elapsed)
}

// A targeted read is charged what it sends: operator.ReadsPerKey reads per key, as a refresh's
// reads are (docs/console-cost.md).
func TestReadIsChargedEveryCommandItSends(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	s := New(Options{Client: client})
	_, err := s.ReadInto(t.Context(), discard{}, []string{"a", "b", "c", "d"})
	require.NoError(t, err)
	assert.Equal(t, int64(4*operator.ReadsPerKey), s.limiter.Charged())
}

// discard is a Sink that keeps nothing.
type discard struct{}

func (discard) Observe([]operator.Lock, time.Time, uint64) {}
func (discard) EndScan(uint64, time.Time)                  {}
func (discard) Absent([]string, time.Time)                 {}
