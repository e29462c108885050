package cli_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/cli"
	"github.com/locktui/locktui/internal/testsupport"
	"github.com/locktui/locktui/internal/testsupport/faultproxy"
	"github.com/locktui/locktui/provider"
)

// started runs app with args in the background and waits until the command printed "ready".
// It returns the command's output and a channel with the exit code.
func started(t *testing.T, app *cli.App, args ...string) (*signalWriter, *testsupport.Buffer, <-chan int) {
	t.Helper()
	stdout, stderr := newSignalWriter("ready\n"), new(testsupport.Buffer)
	app.Stdout, app.Stderr = stdout, stderr
	code := make(chan int, 1)
	go func() { code <- app.Run(t.Context(), args) }()
	select {
	case <-stdout.ready:
	case c := <-code:
		t.Fatalf("locktui exited %d before the command was ready; stderr:\n%s", c, stderr.String())
	}
	return stdout, stderr, code
}

func TestRunPassesTheExitCode(t *testing.T) {
	e := newEnv(t)
	for _, tt := range []struct {
		args []string
		want int
	}{
		{[]string{"run", "k", "--redis", e.srv.URL, "--", "sh", "-c", "exit 7"}, 7},
		{[]string{"--redis", e.srv.URL, "run", "--timeout", "2s", "a", "--expire=5s", "b", "--", "true"}, 0},
		{[]string{"run", "k", "--redis", e.srv.URL, "--", "sh", "-c", "kill -KILL $$"}, cli.ExitSignalBase + 9},
		// Flags after -- belong to the command.
		{[]string{"run", "k", "--redis", e.srv.URL, "--", "sh", "-c", `test "$1" = --help`, "sh", "--help"}, 0},
	} {
		r := run(t, tt.args...)
		requireCode(t, r, tt.want)
		require.Empty(t, r.stderr)
	}
	locks, err := e.ops.List(context.Background())
	require.NoError(t, err)
	require.Empty(t, locks, "every lease was released")
}

func TestRunHoldsTheLockWhileTheCommandRuns(t *testing.T) {
	e := newEnv(t)
	stdin, feed := io.Pipe()
	app := newApp(nil, nil)
	app.Stdin = stdin
	stdout, _, code := started(t, app, "run", "k1", "k2", "--expire", "30s", "--redis", e.srv.URL, "--",
		"sh", "-c", `echo ready; read line; echo "got $line"; exit 4`)

	owner := e.holder(t, "k1")
	require.True(t, strings.HasPrefix(owner, provider.ExecuteOwnerPrefix), "owner %q", owner)
	require.Len(t, owner, len("execute:")+36)
	require.Equal(t, owner, e.holder(t, "k2"))
	l, _, err := e.ops.Get(context.Background(), "k1")
	require.NoError(t, err)
	require.Greater(t, l.TTL, 20*time.Second)
	require.LessOrEqual(t, l.TTL, 30*time.Second)
	err = e.p.Acquire(context.Background(), []string{"k2"}, provider.AcquireOptions{Owner: "other"})
	require.ErrorIs(t, err, provider.ErrNotAcquired)

	_, err = io.WriteString(feed, "go\n")
	require.NoError(t, err)
	require.NoError(t, feed.Close())
	require.Equal(t, 4, <-code)
	require.Equal(t, "ready\ngot go\n", stdout.String())
	require.Empty(t, e.holder(t, "k1"))
	require.Empty(t, e.holder(t, "k2"))
}

func TestRunTimesOutWhenTheKeyIsHeld(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, e.p.Acquire(context.Background(), []string{"b"}, provider.AcquireOptions{Owner: "other", Expire: time.Minute}))
	marker := filepath.Join(t.TempDir(), "ran")
	r := run(t, "run", "a", "b", "--timeout", "300ms", "--redis", e.srv.URL, "--", "touch", marker)
	requireCode(t, r, cli.ExitTimedOut)
	requireOneErrorLine(t, r, "locktui: Timed-out acquiring lock.", "300ms", `"b" is held by "other"`)
	require.NoFileExists(t, marker, "the command must not run without the lock")
	require.Equal(t, "other", e.holder(t, "b"))
	require.Empty(t, e.holder(t, "a"), "keys taken while waiting are given back")
}

// --timeout 0 is flock -n: one attempt, and a held key fails the call at once (not after the
// provider's default wait of 5 s), naming its holder; free keys run the command.
func TestRunTimeoutZeroTriesOnce(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, e.p.Acquire(context.Background(), []string{"b"}, provider.AcquireOptions{Owner: "other", Expire: time.Minute}))
	marker := filepath.Join(t.TempDir(), "ran")
	start := time.Now()
	r := run(t, "run", "a", "b", "--timeout", "0", "--redis", e.srv.URL, "--", "touch", marker)
	elapsed := time.Since(start)
	requireCode(t, r, cli.ExitTimedOut)
	requireOneErrorLine(t, r, `locktui: Failed to acquire lock for key "b" (held by "other"); --timeout 0 tries once`)
	require.Less(t, elapsed, provider.DefaultWaitLockingTimeout/2, "it waited instead of failing at once")
	require.NoFileExists(t, marker, "the command must not run without the lock")
	require.Equal(t, "other", e.holder(t, "b"))
	require.Empty(t, e.holder(t, "a"), "the key the attempt took is given back")

	r = run(t, "run", "a", "c", "--timeout=0", "--redis", e.srv.URL, "--", "touch", marker)
	requireCode(t, r, 0)
	require.Empty(t, r.stderr)
	require.FileExists(t, marker)
	require.Empty(t, e.holder(t, "a"), "released when the command exits")
}

// --conflict-exit-code (flock -E) replaces 75 when the keys are not taken, with a wait or
// without; other outcomes keep their codes.
func TestRunConflictExitCode(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, e.p.Acquire(context.Background(), []string{"held"}, provider.AcquireOptions{Owner: "other", Expire: time.Minute}))
	for _, tt := range []struct {
		args     []string
		want     int
		conflict bool
	}{
		{[]string{"held", "--timeout", "0", "--conflict-exit-code", "9"}, 9, true},
		{[]string{"held", "--timeout", "200ms", "--conflict-exit-code=0"}, 0, true},
		{[]string{"--conflict-exit-code", "9", "held", "--timeout", "200ms"}, 9, true},
		{[]string{"free", "--timeout", "0", "--conflict-exit-code", "9"}, 0, false}, // the command's code
	} {
		args := append(append([]string{"run", "--redis", e.srv.URL}, tt.args...), "--", "true")
		r := run(t, args...)
		requireCode(t, r, tt.want)
		if tt.conflict {
			requireOneErrorLine(t, r, `"held"`, `"other"`)
		} else {
			require.Empty(t, r.stderr)
		}
	}
	r := run(t, "run", "free", "--conflict-exit-code", "9", "--redis", e.srv.URL, "--", "sh", "-c", "exit 4")
	requireCode(t, r, 4)
}

func TestRunStopsTheCommandWhenTheLeaseIsLost(t *testing.T) {
	e := newEnv(t)
	_, stderr, code := started(t, newApp(nil, nil), "run", "k", "--expire", "1s", "--redis", e.srv.URL, "--",
		"sh", "-c", "echo ready; exec sleep 30")
	require.NoError(t, e.srv.Client(t).Del(context.Background(), "medusa_lock:k").Err())
	require.Equal(t, cli.ExitLockLost, <-code)
	// One error line says what happened, and no warning repeats it: the loss is why run exits.
	require.Regexp(t, `^locktui: lost the lock on "k" while the command ran: "k" was deleted by another client; stopping it with SIGTERM \(SIGKILL after \d+ms\)\n$`,
		stderr.String()) // the command obeyed SIGTERM
}

// A key replaced by a value of another type is lost too, and said so.
func TestRunSaysWhenTheKeyBecameAnotherType(t *testing.T) {
	e := newEnv(t)
	_, stderr, code := started(t, newApp(nil, nil), "run", "k", "--expire", "1s", "--redis", e.srv.URL, "--",
		"sh", "-c", "echo ready; exec sleep 30")
	client := e.srv.Client(t)
	_, err := client.TxPipelined(context.Background(), func(p redis.Pipeliner) error {
		p.Del(context.Background(), "medusa_lock:k")
		p.RPush(context.Background(), "medusa_lock:k", "x")
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, cli.ExitLockLost, <-code)
	require.Contains(t, stderr.String(), `locktui: lost the lock on "k" while the command ran: "k" was replaced by a key of another type; stopping it with SIGTERM`)
	require.NotContains(t, stderr.String(), "warning")
}

func TestRunShowsGoRedisLinesAsWarnings(t *testing.T) {
	e := newEnv(t)
	_, stderr, code := started(t, newApp(nil, nil), "run", "k", "--expire", "1s", "--redis", e.srv.URL, "--",
		"sh", "-c", "echo ready; exec sleep 30")
	e.srv.Stop() // the renewals' dials fail, and go-redis says so
	require.Equal(t, cli.ExitLockLost, <-code)
	out := stderr.String()
	require.Contains(t, out, "locktui: warning: redis: connection pool: failed to dial")
	// Why run exits is an error line, not a warning: the renewals failed, so the lease expired.
	require.NotContains(t, out, "warning: Lost the lock")
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		require.True(t, strings.HasPrefix(line, "locktui: "), "a line not in locktui's format: %q", line)
	}
}

func TestRunKillsACommandThatIgnoresSIGTERM(t *testing.T) {
	e := newEnv(t)
	// An ignored signal stays ignored across exec, so sleep ignores SIGTERM.
	_, stderr, code := started(t, newApp(nil, nil), "run", "k", "--expire", "1s", "--grace", "200ms",
		"--redis", e.srv.URL, "--", "sh", "-c", `trap "" TERM; echo ready; exec sleep 30`)
	require.NoError(t, e.srv.Client(t).Set(context.Background(), "medusa_lock:k", "thief", 0).Err())
	require.Equal(t, cli.ExitLockLost, <-code)
	require.Contains(t, stderr.String(), `locktui: lost the lock on "k" while the command ran: "k" was taken by "thief"; stopping it with SIGTERM (SIGKILL after 200ms)`)
	require.Contains(t, stderr.String(), "locktui: the command did not exit within 200ms of SIGTERM; sent SIGKILL")
	require.Equal(t, "thief", e.holder(t, "k"), "the new owner's lock is left alone")
}

func TestRunForwardsSignals(t *testing.T) {
	e := newEnv(t)
	sigs := make(chan os.Signal, 1)
	app := newApp(nil, nil)
	app.Signals = sigs
	_, stderr, code := started(t, app, "run", "k", "--redis", e.srv.URL, "--", "sh", "-c", "echo ready; exec sleep 30")
	require.NotEmpty(t, e.holder(t, "k"))
	sigs <- syscall.SIGTERM
	require.Equal(t, cli.ExitSignalBase+int(syscall.SIGTERM), <-code)
	require.Empty(t, stderr.String())
	require.Empty(t, e.holder(t, "k"), "released when the command exits")
}

func TestRunInterruptedWhileWaiting(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, e.p.Acquire(context.Background(), []string{"k"}, provider.AcquireOptions{Owner: "other", Expire: time.Minute}))
	sigs := make(chan os.Signal, 1)
	sigs <- syscall.SIGINT // arrives while locktui waits for "k"
	app := newApp(nil, nil)
	app.Signals = sigs
	marker := filepath.Join(t.TempDir(), "ran")
	r := runApp(t, app, "run", "k", "--timeout", "1m", "--redis", e.srv.URL, "--", "touch", marker)
	requireCode(t, r, cli.ExitSignalBase+int(syscall.SIGINT))
	requireOneErrorLine(t, r, "interrupted by SIGINT while waiting for", `"k"`)
	require.NoFileExists(t, marker)
	require.Equal(t, "other", e.holder(t, "k"))
}

func TestRunCommandThatCannotStart(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	notExecutable := filepath.Join(dir, "script")
	require.NoError(t, os.WriteFile(notExecutable, []byte("#!/bin/sh\n"), 0o644))
	for _, tt := range []struct {
		command string
		code    int
		want    string
	}{
		{"locktui-no-such-command", cli.ExitNotFound, "command not found: locktui-no-such-command"},
		{filepath.Join(dir, "missing"), cli.ExitNotFound, "command not found: " + filepath.Join(dir, "missing")},
		{notExecutable, cli.ExitCannotExecute, "cannot execute " + notExecutable + ": permission denied"},
	} {
		r := run(t, "run", "k", "--redis", e.srv.URL, "--", tt.command, "arg")
		requireCode(t, r, tt.code)
		requireOneErrorLine(t, r, tt.want)
		require.Empty(t, e.holder(t, "k"), "the lock is not left behind")
	}
}

// The safety contract of run: no one else may take the keys while the command can still run.
// With the link to Redis silent, the renewals stop reaching Redis, which expires the keys one TTL
// after the last renewal it got; the command must be dead before that, also when it ignores
// SIGTERM. Its death is seen when it happens, by the end of a FIFO only it holds open, and the
// key is read at that moment through a direct client: still there, still the lease's.
func TestRunKillsTheCommandBeforeRedisCanExpireTheKeys(t *testing.T) {
	e := newEnv(t)
	px := faultproxy.StartT(t, e.srv.Addr)
	exited := aliveUntilEOF(t)
	// An ignored signal stays ignored across exec, so only SIGKILL stops sleep; it inherits fd 3.
	_, stderr, code := started(t, newApp(nil, nil), "run", "k", "--expire", "3s", "--grace", "700ms",
		"--redis", "redis://"+px.Addr(), "--", "sh", "-c", `trap "" TERM; exec 3>"$0"; echo ready; exec sleep 30`, exited.fifo)
	owner := e.holder(t, "k")
	require.NotEmpty(t, owner)

	px.Blackhole(faultproxy.Upstream)
	px.Blackhole(faultproxy.Downstream)
	select {
	case <-exited.c:
	case <-time.After(time.Minute):
		t.Fatalf("the command still runs a minute after the link went silent; stderr:\n%s", stderr.String())
	}
	e.requireStillHeld(t, "k", owner, stderr.String())

	px.Restore(faultproxy.Upstream)
	px.Restore(faultproxy.Downstream)
	require.Equal(t, cli.ExitLockLost, <-code)
	require.Contains(t, stderr.String(), `locktui: renewal of the lock on "k" is overdue`)
	require.Contains(t, stderr.String(), "locktui: the command still ran at the lease's deadline; sent SIGKILL")
	require.Contains(t, stderr.String(), `locktui: lost the lock on "k" while the command ran: the lease expired`)
	require.NotContains(t, stderr.String(), "warning: Lost the lock")
}

// fifoWatch is a FIFO that a command opens for writing; c is closed when every writer has
// closed it, which for a command that holds it until it exits is the moment it dies.
type fifoWatch struct {
	fifo string
	c    chan struct{}
}

func aliveUntilEOF(t *testing.T) fifoWatch {
	t.Helper()
	w := fifoWatch{fifo: filepath.Join(t.TempDir(), "alive"), c: make(chan struct{})}
	require.NoError(t, syscall.Mkfifo(w.fifo, 0o600))
	go func() {
		defer close(w.c)
		f, err := os.Open(w.fifo) // blocks until the command opens it for writing
		if err != nil {
			return
		}
		defer f.Close()
		_, _ = io.Copy(io.Discard, f)
	}()
	t.Cleanup(func() {
		// If the command never opened the FIFO, open it here so the reader above returns.
		if f, err := os.OpenFile(w.fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		<-w.c
	})
	return w
}

// A long command whose renewals work is never stopped, with the default grace of a short lease
// and with the largest grace allowed; the link adds some latency to every renewal.
func TestRunKeepsALongCommandRunningWhileRenewalsWork(t *testing.T) {
	for _, flags := range [][]string{
		{"--expire", "1s"},                     // grace 250ms
		{"--expire", "2s", "--grace", "500ms"}, // the largest for 2s
	} {
		t.Run(strings.Join(flags, " "), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			px := faultproxy.StartT(t, e.srv.Addr)
			px.Delay(faultproxy.Upstream, 10*time.Millisecond)
			px.Delay(faultproxy.Downstream, 10*time.Millisecond)
			// The command outlives several TTLs, so it needs many renewals.
			args := append([]string{"run", "k", "--redis", "redis://" + px.Addr()}, flags...)
			r := run(t, append(args, "--", "sh", "-c", "sleep 4; echo done")...)
			requireCode(t, r, 0)
			require.Equal(t, "done\n", r.stdout)
			require.Empty(t, r.stderr)
			require.Empty(t, e.holder(t, "k"), "released when the command exits")
		})
	}
}

// --grace may be at most a quarter of --expire, else a slightly late renewal would stop every
// command; without --grace it is min(10s, expire/4).
func TestRunGraceIsAtMostAQuarterOfExpire(t *testing.T) {
	e := newEnv(t)
	for _, tt := range []struct {
		flags []string
		want  string // the error, "" when accepted
	}{
		{[]string{"--expire", "4s", "--grace", "1001ms"}, "--grace 1.001s is more than a quarter of --expire 4s: at most 1s"},
		{[]string{"--grace", "16s"}, "--grace 16s is more than a quarter of --expire 1m0s: at most 15s"},
		{[]string{"--grace", "11s", "--expire", "1m"}, ""},
		{[]string{"--expire", "4s", "--grace", "1s"}, ""},
		{[]string{"--expire", "4s", "--grace", "0"}, ""},
		{[]string{"--expire", "1s"}, ""}, // the default grace shrinks to 250ms
	} {
		args := append([]string{"run", "k", "--redis", e.srv.URL}, tt.flags...)
		r := run(t, append(args, "--", "true")...)
		if tt.want == "" {
			requireCode(t, r, 0)
			require.Empty(t, r.stderr)
			continue
		}
		requireCode(t, r, cli.ExitUsage)
		requireOneErrorLine(t, r, tt.want)
	}
	require.Empty(t, e.holder(t, "k"), "a refused command line takes no lock")
}

// A Redis restart (a new run_id) may have lost the keys: the lease is lost, and run says why.
func TestRunSaysWhenRedisRestarted(t *testing.T) {
	e := newEnv(t)
	// The first renewal comes 10 s in: the restart is seen first, by its run_id.
	_, stderr, code := started(t, newApp(nil, nil), "run", "k", "--expire", "30s", "--redis", e.srv.URL, "--",
		"sh", "-c", "echo ready; exec sleep 30")
	awaitRunIDProbe(t, e.srv.Client(t)) // else the first run_id read could come after the restart
	e.srv.Restart(t, 0)
	require.Equal(t, cli.ExitLockLost, <-code)
	require.Contains(t, stderr.String(), `locktui: lost the lock on "k" while the command ran: the Redis server restarted or failed over, which may have lost the keys; stopping it with SIGTERM`)
	require.NotContains(t, stderr.String(), "warning: Lost the lock")
}

// awaitRunIDProbe waits until another client has sent INFO (the provider reads the run_id
// with INFO server while it holds leases), counting the INFO calls this helper makes itself.
func awaitRunIDProbe(t *testing.T, client *redis.Client) {
	t.Helper()
	calls := func() int64 {
		info, err := client.Info(context.Background(), "commandstats").Result()
		require.NoError(t, err)
		m := regexp.MustCompile(`cmdstat_info:calls=(\d+)`).FindStringSubmatch(info)
		if m == nil {
			return 0
		}
		n, err := strconv.ParseInt(m[1], 10, 64)
		require.NoError(t, err)
		return n
	}
	first, own := calls(), int64(1)
	require.Eventually(t, func() bool {
		own++
		return calls()-first >= own
	}, 10*time.Second, 5*time.Millisecond, "the provider never read the run_id")
}

// run --fair-queue waits in the key's fair queue (docs/waiting.md): its ticket is in the queue
// while the key is held, and it runs the command once the key is freed.
func TestRunFairQueueWaitsInTheQueue(t *testing.T) {
	e := newEnv(t)
	rdb := e.srv.Client(t)
	require.NoError(t, e.p.Acquire(t.Context(), []string{"k"}, provider.AcquireOptions{Owner: "other", Expire: time.Minute}))
	done := make(chan result, 1)
	go func() {
		done <- run(t, "run", "k", "--fair-queue", "--timeout", "20s", "--redis", e.srv.URL, "--", "true")
	}()
	queue := "locktui:{" + provider.DefaultNamespace + "k}:queue"
	require.Eventually(t, func() bool { return rdb.LLen(t.Context(), queue).Val() == 1 }, 10*time.Second, 5*time.Millisecond,
		"run's ticket joins the key's queue")
	ok, err := e.p.Release(t.Context(), []string{"k"}, "other")
	require.NoError(t, err)
	require.True(t, ok)
	requireCode(t, <-done, 0)
	require.Zero(t, rdb.LLen(t.Context(), queue).Val(), "taking the key left the queue")
}
