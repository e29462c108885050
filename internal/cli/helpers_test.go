package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/budget"
	"github.com/locktui/locktui/internal/cli"
	"github.com/locktui/locktui/internal/testsupport"
	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
)

// go-redis logs failed dials itself; the tests of unreachable servers would fill the log (locktui's
// main drops it too). release and release-all audit to audit.DefaultPath() unless --audit-log is
// given: that default goes to a scratch directory.
func TestMain(m *testing.M) {
	testsupport.Main(m, testsupport.MainOptions{FailedDials: true, StateHome: true})
}

// result is what one locktui invocation produced.
type result struct {
	code           int
	stdout, stderr string
}

// env is a redis-server, and a provider and an operator's Inspector on it for cross-checks.
type env struct {
	srv *redistest.Server
	p   *provider.Provider
	ops *operator.Inspector
}

// fill writes, in one pipeline, locks of owner under "medusa_lock:<prefix>:<i>" for i below
// locks, and others keys "other:<i>" outside the namespace (a database that holds more than
// locks).
func (e *env) fill(t *testing.T, prefix, owner string, locks, others int) {
	t.Helper()
	ctx := context.Background()
	pipe := e.srv.Client(t).Pipeline()
	for i := range locks {
		pipe.Set(ctx, fmt.Sprintf("medusa_lock:%s:%d", prefix, i), owner, 0)
	}
	for i := range others {
		pipe.Set(ctx, fmt.Sprintf("other:%d", i), "x", 0)
	}
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)
}

func newEnv(t *testing.T) *env {
	t.Helper()
	srv := redistest.Start(t)
	p := provider.New(srv.Client(t), nil)
	t.Cleanup(p.Close)
	return &env{srv: srv, p: p, ops: operator.New(srv.Client(t), nil)}
}

// newApp returns an App that sees no REDIS_URL (so nothing reaches a server on 6379).
func newApp(stdout, stderr *bytes.Buffer) *cli.App {
	return &cli.App{Stdout: stdout, Stderr: stderr, Getenv: func(string) string { return "" }}
}

// run runs locktui with args and returns its exit code and output.
func run(t *testing.T, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := newApp(&stdout, &stderr).Run(t.Context(), args)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// runApp runs app with args; app's writers are the returned buffers.
func runApp(t *testing.T, app *cli.App, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	app.Stdout, app.Stderr = &stdout, &stderr
	code := app.Run(t.Context(), args)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// requireCode checks the exit code and shows the output when it is wrong.
func requireCode(t *testing.T, r result, want int) {
	t.Helper()
	require.Equal(t, want, r.code, "exit code; stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
}

// requireOneErrorLine checks that stderr is exactly one "locktui: " line (plus, for usage
// errors, the hint line) mentioning every part of want.
func requireOneErrorLine(t *testing.T, r result, want ...string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	if r.code == cli.ExitUsage {
		require.Len(t, lines, 2, "stderr: %q", r.stderr)
		require.True(t, strings.HasPrefix(lines[1], "Run 'locktui "), "hint line: %q", lines[1])
	} else {
		require.Len(t, lines, 1, "stderr: %q", r.stderr)
	}
	require.True(t, strings.HasPrefix(lines[0], "locktui: "), "error line: %q", lines[0])
	for _, w := range want {
		require.Contains(t, lines[0], w)
	}
	require.NotContains(t, r.stderr, "goroutine")
	require.NotContains(t, r.stderr, "panic")
}

// holder returns the owner of key, or "" when it is not held.
func (e *env) holder(t *testing.T, key string) string {
	t.Helper()
	l, ok, err := e.ops.Get(context.Background(), key)
	require.NoError(t, err)
	if !ok {
		return ""
	}
	return l.Owner
}

// signalWriter collects output and closes ready once it has seen marker.
type signalWriter struct {
	testsupport.Buffer
	marker string
	ready  chan struct{}
	once   sync.Once
}

func newSignalWriter(marker string) *signalWriter {
	return &signalWriter{marker: marker, ready: make(chan struct{})}
}

func (w *signalWriter) Write(b []byte) (int, error) {
	n, err := w.Buffer.Write(b)
	if strings.Contains(w.String(), w.marker) {
		w.once.Do(func() { close(w.ready) })
	}
	return n, err
}

// virtualBudget returns a limiter of budget.Default units a second on a virtual clock, and
// the clock.
func virtualBudget() (*budget.Limiter, *budget.VirtualClock) {
	l := budget.New(budget.Default)
	return l, budget.UseVirtualClock(l)
}

// requireStillHeld requires that key is still owner's, with a TTL, in one read: checked the
// moment a command that had to die before the key could expire is seen dead.
func (e *env) requireStillHeld(t *testing.T, key, owner, stderr string) {
	t.Helper()
	var get *redis.StringCmd
	var pttl *redis.DurationCmd
	_, err := e.srv.Client(t).TxPipelined(context.Background(), func(p redis.Pipeliner) error {
		get, pttl = p.Get(context.Background(), "medusa_lock:"+key), p.PTTL(context.Background(), "medusa_lock:"+key)
		return nil
	})
	require.NoError(t, err, "the key expired before the command died; stderr:\n%s", stderr)
	require.Equal(t, owner, get.Val(), "the key is still the lease's when the command dies")
	require.Positive(t, pttl.Val(), "the key still has a TTL when the command dies")
}
