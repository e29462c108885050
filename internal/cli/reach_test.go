package cli_test

// A Redis that cannot be reached (stopped, restarting, failing over): commands that do not wait
// retry it for 5 s, commands that wait ride it out within their own timeout.

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/cli"
	"github.com/locktui/locktui/internal/redisproc"
	"github.com/locktui/locktui/internal/testsupport"
	"github.com/locktui/locktui/internal/testsupport/faultproxy"
	"github.com/locktui/locktui/provider"
)

// retryWindow is how long a command that does not wait retries (connectTimeout).
const retryWindow = 5 * time.Second

// lines splits stderr into its lines, requiring each to be one of locktui's.
func lines(t *testing.T, stderr string) []string {
	t.Helper()
	out := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	for _, l := range out {
		require.True(t, strings.HasPrefix(l, "locktui: "), "stderr line %q", l)
	}
	require.NotContains(t, stderr, "goroutine")
	require.NotContains(t, stderr, "panic")
	return out
}

// A command that does not wait, on a Redis that never comes back: one line when it starts
// retrying, one when it gives up after the window, saying how long it tried. The password
// never shows.
func TestCommandsThatDoNotWaitRetryBrieflyThenFail(t *testing.T) {
	srv := newEnv(t).srv
	srv.Stop() // a port nobody listens on any more
	secretURL := "redis://u:secret@" + srv.Addr
	for _, args := range [][]string{
		{"list", "--redis", srv.URL},
		{"get", "k", "--redis", srv.URL},
		{"acquire", "k", "--owner", "o", "--redis", srv.URL},
		{"release", "k", "--force", "--redis", srv.URL},
		{"release-all", "--owner", "o", "--redis", srv.URL},
		{"run", "k", "--timeout", "0", "--redis", srv.URL, "--", "true"},
		{"list", "--redis", secretURL},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel() // each case spends the whole window
			start := time.Now()
			r := run(t, args...)
			requireCode(t, r, cli.ExitError)
			require.GreaterOrEqual(t, time.Since(start), retryWindow, "it retried for the window")
			require.Empty(t, r.stdout)
			got := lines(t, r.stderr)
			require.Len(t, got, 2, "stderr: %q", r.stderr)
			where := strings.Replace(args[len(args)-1], "secret", "xxxxx", 1)
			if args[0] == "run" {
				where = srv.URL
			}
			require.True(t, strings.HasPrefix(got[0], "locktui: cannot reach Redis at "+where+": "), got[0])
			require.True(t, strings.HasSuffix(got[0], "connection refused; retrying for up to 5s"), got[0])
			require.True(t, strings.HasPrefix(got[1], "locktui: cannot reach Redis at "+where+": "), got[1])
			require.True(t, strings.HasSuffix(got[1], "connection refused (tried for 5s)"), got[1])
			require.NotContains(t, r.stderr, "secret")
		})
	}
}

// list, started while Redis refuses connections, lists the locks once it takes them again
// within the window, after its one retry line.
func TestListRidesOutABriefOutage(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, e.p.Acquire(context.Background(), []string{"k"}, provider.AcquireOptions{Owner: "o", Expire: time.Minute}))
	px := faultproxy.StartT(t, e.srv.Addr)
	px.Refuse(true)
	stderr := newSignalWriter("retrying for up to 5s\n")
	var stdout testsupport.Buffer
	app := newApp(nil, nil)
	app.Stdout, app.Stderr = &stdout, stderr
	code := make(chan int, 1)
	go func() { code <- app.Run(t.Context(), []string{"list", "--redis", "redis://" + px.Addr()}) }()
	select {
	case <-stderr.ready:
	case c := <-code:
		t.Fatalf("list exited %d before it retried; stderr:\n%s", c, stderr.String())
	}
	px.Refuse(false)
	require.Equal(t, cli.ExitOK, <-code, "stderr:\n%s", stderr.String())
	require.Len(t, lines(t, stderr.String()), 1, "only the retry line: %q", stderr.String())
	rows := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	require.Len(t, rows, 2, "the header and the lock: %q", stdout.String())
	require.Equal(t, []string{"k", "o"}, strings.Fields(rows[1])[:2])
}

// run --timeout 10s, started while Redis is down, takes the lock and runs the command once
// Redis is back about 2 s later (a restart, a Sentinel failover), after one line that says it
// retries.
func TestRunRidesOutARedisRestart(t *testing.T) {
	srv, err := redisproc.Start(t.Context(), redisproc.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	restarted := make(chan error, 1)
	go func() { restarted <- srv.Restart(t.Context(), 2*time.Second) }()
	require.Eventually(t, func() bool {
		c, err := net.DialTimeout("tcp", srv.Addr(), time.Second)
		if err == nil {
			_ = c.Close()
		}
		return err != nil
	}, 10*time.Second, 5*time.Millisecond, "the server is down")
	r := run(t, "run", "k", "--timeout", "10s", "--redis", srv.URL(), "--", "sh", "-c", "echo ran")
	require.NoError(t, <-restarted)
	requireCode(t, r, cli.ExitOK)
	require.Equal(t, "ran\n", r.stdout)
	got := lines(t, r.stderr)
	require.Len(t, got, 1, "stderr: %q", r.stderr)
	require.Contains(t, got[0], "cannot reach Redis at "+srv.URL()+": ")
	require.True(t, strings.HasSuffix(got[0], "; retrying within --timeout 10s"), got[0])
}

// A command that waits, on a Redis that never comes back, retries it within its own timeout
// and then fails as a command that does not wait does, saying how long it tried.
func TestWaitingCommandsRetryRedisWithinTheirTimeout(t *testing.T) {
	srv := newEnv(t).srv
	srv.Stop()
	for _, tt := range []struct {
		args []string
		flag string
	}{
		{[]string{"run", "k", "--timeout", "3s", "--redis", srv.URL, "--", "true"}, "--timeout"},
		{[]string{"acquire", "k", "--owner", "o", "--wait", "3s", "--redis", srv.URL}, "--wait"},
	} {
		t.Run(tt.args[0], func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			r := run(t, tt.args...)
			requireCode(t, r, cli.ExitError)
			require.GreaterOrEqual(t, time.Since(start), 3*time.Second, "it retried for its timeout")
			require.Empty(t, r.stdout)
			got := lines(t, r.stderr)
			require.Len(t, got, 2, "stderr: %q", r.stderr)
			require.True(t, strings.HasPrefix(got[0], "locktui: cannot reach Redis at "+srv.URL+": "), got[0])
			require.True(t, strings.HasSuffix(got[0], "connection refused; retrying within "+tt.flag+" 3s"), got[0])
			require.True(t, strings.HasSuffix(got[1], "connection refused (tried for 3s)"), got[1])
		})
	}
}

// A wait that loses Redis after it started (the key is held; then every connection is cut and
// refused) ends at its timeout saying that Redis could not be reached: an error (exit 1), not
// the conflict's exit code, since the key may well be free by now.
func TestRunSaysRedisWasUnreachableWhenItsWaitEnds(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, e.p.Acquire(context.Background(), []string{"k"}, provider.AcquireOptions{Owner: "other", Expire: time.Minute}))
	px := faultproxy.StartT(t, e.srv.Addr)
	app := newApp(nil, nil)
	var stdout, stderr testsupport.Buffer
	app.Stdout, app.Stderr = &stdout, &stderr
	code := make(chan int, 1)
	go func() {
		code <- app.Run(t.Context(), []string{"run", "k", "--timeout", "2s", "--redis", "redis://" + px.Addr(), "--", "true"})
	}()
	rdb := e.srv.Client(t)
	require.Eventually(t, func() bool {
		n, err := rdb.Exists(context.Background(), "locktui:{medusa_lock:k}:waiting").Result()
		return err == nil && n == 1
	}, 10*time.Second, 5*time.Millisecond, "run waits for the key")
	px.Refuse(true)
	px.CutAll()
	require.Equal(t, cli.ExitError, <-code, "stderr:\n%s", stderr.String())
	require.Empty(t, stdout.String())
	last := lines(t, stderr.String())
	require.Contains(t, last[len(last)-1], `locktui: Timed-out acquiring lock.`)
	require.Contains(t, last[len(last)-1], `waited 2s for "k"; Redis could not be reached: `)
}
