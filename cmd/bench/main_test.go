package main

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/locktui/locktui/internal/bench"
	"github.com/locktui/locktui/internal/testsupport/redistest"
)

func TestMain(m *testing.M) {
	if bench.IsWorker() { // a Go worker process of a multi-process scenario
		os.Exit(bench.WorkerMain())
	}
	goleak.VerifyTestMain(m)
}

var badArgs = []struct {
	args []string
	want string
}{
	{[]string{"--duration", "0s"}, "--duration must be positive"},
	{[]string{"--duration", "soon"}, "invalid value"},
	{[]string{"--multi-duration", "-1s"}, "--multi-duration must be positive"},
	{[]string{"--warmup", "-3"}, "--warmup must not be negative"},
	{[]string{"--timeout", "500ms"}, "--timeout must be at least 1s"},
	{[]string{"--scenario", "uncontended_7"}, `unknown scenario "uncontended_7"`},
	{[]string{"--impl", "go,rust"}, `unknown implementation "rust"`},
	{[]string{"extra"}, `unexpected argument "extra"`},
	{[]string{"--no-such-flag"}, "flag provided but not defined"},
}

func TestBadArgumentsExitWithStatus2AndSayWhy(t *testing.T) {
	for _, c := range badArgs {
		var stdout, stderr bytes.Buffer
		code := run(t.Context(), c.args, &stdout, &stderr)
		assert.Equal(t, 2, code, "run(%q) exit status", c.args)
		assert.Contains(t, stderr.String(), c.want, "run(%q) stderr", c.args)
		assert.Empty(t, stdout.String(), "run(%q) stdout", c.args)
	}
}

func TestHelpExitsZero(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 0, run(t.Context(), []string{"--help"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "-duration")
}

// TestQuickGoOnlyRunPrintsOneJSONReport runs the command end to end on one scenario with the
// Go implementation only (the Node side is covered by internal/bench's tests).
func TestQuickGoOnlyRunPrintsOneJSONReport(t *testing.T) {
	srv := redistest.Start(t)
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"--redis-url", srv.URL, "--quick", "--impl", "go", "--scenario", "contended_8x1ms"}, &stdout, &stderr)
	require.Equal(t, 0, code, "stderr:\n%s", stderr.String())
	var rep struct {
		Redis    string `json:"redis"`
		Settings struct {
			DurationMs float64 `json:"duration_ms"`
		} `json:"settings"`
		Scenarios []struct {
			Name     string `json:"name"`
			Impl     string `json:"impl"`
			Overlaps *int   `json:"overlaps"`
		} `json:"scenarios"`
		Problems []string `json:"problems"`
	}
	dec := json.NewDecoder(&stdout)
	require.NoError(t, dec.Decode(&rep))
	assert.False(t, dec.More(), "one JSON document on stdout")
	assert.NotEmpty(t, rep.Redis)
	assert.Equal(t, 250.0, rep.Settings.DurationMs)
	require.Len(t, rep.Scenarios, 1)
	assert.Equal(t, "contended_8x1ms", rep.Scenarios[0].Name)
	assert.Equal(t, "go", rep.Scenarios[0].Impl)
	require.NotNil(t, rep.Scenarios[0].Overlaps)
	assert.Zero(t, *rep.Scenarios[0].Overlaps)
	assert.Empty(t, rep.Problems)
	assert.Contains(t, stderr.String(), "bench: contended_8x1ms")
}
