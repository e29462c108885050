package main_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/cli"
	"github.com/locktui/locktui/internal/testsupport"
	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
)

// locktui is the binary under test, built once by TestMain.
var locktui string

func TestMain(m *testing.M) {
	testsupport.Main(m, testsupport.MainOptions{Build: ".", Binary: &locktui})
}

// exitCode runs the binary with args (and no REDIS_URL) and returns its exit code and output.
func exitCode(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(locktui, args...)
	cmd.Env = withoutRedisURL()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run locktui: %v", err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

func withoutRedisURL() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REDIS_URL=") {
			env = append(env, kv)
		}
	}
	return env
}

// requireOneLine checks stderr is one "locktui: " line with want in it and no Go crash output.
func requireOneLine(t *testing.T, stderr, want string) {
	t.Helper()
	require.Equal(t, 1, strings.Count(stderr, "\n"), "stderr: %q", stderr)
	require.True(t, strings.HasPrefix(stderr, "locktui: "), "stderr: %q", stderr)
	require.Contains(t, stderr, want)
	require.NotContains(t, stderr, "goroutine")
	require.NotContains(t, stderr, "panic")
}

func TestBinaryBadURL(t *testing.T) {
	code, stdout, stderr := exitCode(t, "list", "--redis", "http://localhost:6390")
	require.Equal(t, cli.ExitError, code)
	require.Empty(t, stdout)
	requireOneLine(t, stderr, "bad Redis URL")
}

func TestBinaryBadURLNeverShowsThePassword(t *testing.T) {
	code, stdout, stderr := exitCode(t, "--redis", "redis://user:hunter2@host:notaport", "list")
	require.Equal(t, cli.ExitError, code)
	require.Empty(t, stdout)
	requireOneLine(t, stderr, `bad Redis URL "redis://xxxxx@host:notaport": invalid port ":notaport" after host`)
	require.NotContains(t, stderr, "hunter2")
}

// An unreachable Redis is retried briefly (a failover, a restart), said in one line, and the
// give-up is one more line.
func TestBinaryUnreachableRedis(t *testing.T) {
	srv := redistest.Start(t)
	srv.Stop()
	code, stdout, stderr := exitCode(t, "--redis", srv.URL, "list")
	require.Equal(t, cli.ExitError, code)
	require.Empty(t, stdout)
	lines := strings.SplitAfter(stderr, "\n")
	require.Len(t, lines, 3, "two lines and nothing after the last newline: %q", stderr)
	requireOneLine(t, lines[0], "cannot reach Redis at "+srv.URL)
	require.Contains(t, lines[0], "retrying for up to")
	requireOneLine(t, lines[1], "cannot reach Redis at "+srv.URL)
	require.Contains(t, lines[1], "(tried for ")
}

func TestBinaryUsageError(t *testing.T) {
	code, stdout, stderr := exitCode(t, "list", "--wat")
	require.Equal(t, cli.ExitUsage, code)
	require.Empty(t, stdout)
	require.Equal(t, "locktui: unknown flag --wat\nRun 'locktui list --help' for usage.\n", stderr)
}

func TestBinaryUsesRedisURLFromTheEnvironment(t *testing.T) {
	srv := redistest.Start(t)
	cmd := exec.Command(locktui, "acquire", "k", "--owner", "cron", "--expire", "1m")
	cmd.Env = append(withoutRedisURL(), "REDIS_URL="+srv.URL)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	l, ok, err := operator.New(srv.Client(t), nil).Get(context.Background(), "k")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "cron", l.Owner)
}

// TestBinaryRunForwardsRealSignals sends SIGTERM to the locktui process: the command gets it,
// locktui exits 128+15 and the lock is released.
func TestBinaryRunForwardsRealSignals(t *testing.T) {
	srv := redistest.Start(t)
	cmd := exec.Command(locktui, "run", "k", "--redis", srv.URL, "--", "sh", "-c", "echo ready; exec sleep 30")
	cmd.Env = withoutRedisURL()
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)
	ops := operator.New(srv.Client(t), nil)
	l, ok, err := ops.Get(context.Background(), "k")
	require.NoError(t, err)
	require.True(t, ok, "held while the command runs")
	require.True(t, strings.HasPrefix(l.Owner, provider.ExecuteOwnerPrefix))

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	err = cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, cli.ExitSignalBase+int(syscall.SIGTERM), ee.ExitCode(), "stderr: %s", stderr.String())
	require.Empty(t, stderr.String())
	_, ok, err = ops.Get(context.Background(), "k")
	require.NoError(t, err)
	require.False(t, ok, "released when the command exits")
}

// The binary reads its version from its own build information (a test build from a checkout
// is "(devel)"; its revision depends on how it was built).
func TestBinaryVersion(t *testing.T) {
	code, stdout, stderr := exitCode(t, "version")
	require.Equal(t, cli.ExitOK, code)
	require.Empty(t, stderr)
	require.Regexp(t, `^locktui \(devel\)\nrevision: ([0-9a-f]{40}( \(modified\))?|unknown)\ntime:     (\S+|unknown)\ngo:       go1\.\S+\n$`, stdout)
}
