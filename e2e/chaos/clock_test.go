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
	"github.com/locktui/locktui/internal/stocknode"
)

func TestMonoNowAdvancesWithTime(t *testing.T) {
	start, mono0 := time.Now(), chaos.MonoNow()
	<-time.After(20 * time.Millisecond)
	mono1, elapsed := chaos.MonoNow(), time.Since(start)
	require.Positive(t, mono0)
	require.InDelta(t, elapsed, time.Duration(mono1-mono0), float64(5*time.Millisecond),
		"MonoNow and Go's monotonic clock disagree")
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
	node, err := exec.LookPath("node")
	require.NoError(t, err, stocknode.NodeInstallHint)
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
