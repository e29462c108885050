//go:build linux || darwin

package chaos_test

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/e2e/chaos"
	"github.com/locktui/locktui/internal/nodeproc"
)

func TestMonoNowAdvancesWithTime(t *testing.T) {
	// Each MonoNow is read between two readings of Go's monotonic clock, so the time that
	// passed on MonoNow must lie between the shortest and the longest time that passed on Go's,
	// however long the test is descheduled between two readings.
	before0, mono0, after0 := time.Now(), chaos.MonoNow(), time.Now()
	<-time.After(20 * time.Millisecond)
	before1, mono1, after1 := time.Now(), chaos.MonoNow(), time.Now()
	require.Positive(t, mono0)
	const slack = time.Millisecond // the two clocks may read at different resolutions
	passed := time.Duration(mono1 - mono0)
	require.GreaterOrEqual(t, passed, before1.Sub(after0)-slack, "MonoNow ran slower than Go's monotonic clock")
	require.LessOrEqual(t, passed, after1.Sub(before0)+slack, "MonoNow ran faster than Go's monotonic clock")
	prev := chaos.MonoNow()
	for range 1000 {
		now := chaos.MonoNow()
		require.GreaterOrEqual(t, now, prev, "MonoNow went back")
		prev = now
	}
}

// The documented claim: a Node process reading process.hrtime.bigint() gets a value between two
// MonoNow readings taken around it.
func TestMonoNowIsNodesHrtime(t *testing.T) {
	node, err := nodeproc.LookPath()
	require.NoError(t, err)
	before := chaos.MonoNow()
	out, err := exec.CommandContext(t.Context(), node, "-e",
		"process.stdout.write(process.hrtime.bigint().toString())").Output()
	after := chaos.MonoNow()
	require.NoError(t, err)
	got, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	require.NoError(t, err)
	require.GreaterOrEqual(t, got, before, "node's clock is behind MonoNow")
	require.LessOrEqual(t, got, after, "node's clock is ahead of MonoNow")
}
