package cli_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/budget"
	"github.com/locktui/locktui/internal/cli"
	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
)

func TestFlagsAnywhere(t *testing.T) {
	e := newEnv(t)
	url := e.srv.URL
	for i, args := range [][]string{
		{"--redis", url, "acquire", "k0", "--owner", "o", "--expire", "30s"},
		{"acquire", "k1", "--owner", "o", "--redis", url, "--expire=30"},
		{"acquire", "--owner", "o", "k2", "--redis=" + url, "k3", "--expire", "30s"},
		{"-redis", url, "acquire", "-owner=o", "-expire", "30s", "--", "k4", "--k5"},
	} {
		r := run(t, args...)
		requireCode(t, r, cli.ExitOK)
		require.Empty(t, r.stderr, "args %d", i)
	}
	for _, key := range []string{"k0", "k1", "k2", "k3", "k4", "--k5"} {
		require.Equal(t, "o", e.holder(t, key), "key %q", key)
		l, _, err := e.ops.Get(context.Background(), key)
		require.NoError(t, err)
		require.Greater(t, l.TTL, 20*time.Second, "key %q", key)
	}
}

func TestRedisURLFromEnvironmentAndNamespace(t *testing.T) {
	e := newEnv(t)
	app := newApp(nil, nil)
	app.Getenv = func(name string) string {
		if name == "REDIS_URL" {
			return e.srv.URL
		}
		return ""
	}
	r := runApp(t, app, "acquire", "k", "--owner", "o", "--expire", "10s", "--namespace", "other:")
	requireCode(t, r, cli.ExitOK)

	other := operator.New(e.srv.Client(t), &operator.Options{Namespace: "other:"})
	l, ok, err := other.Get(context.Background(), "k")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "other:k", l.RedisKey)
	require.Empty(t, e.holder(t, "k"), "the default namespace is untouched")
}

func TestAcquire(t *testing.T) {
	e := newEnv(t)
	url := e.srv.URL

	r := run(t, "acquire", "a", "b", "--owner", "o1", "--expire", "30s", "--redis", url)
	requireCode(t, r, cli.ExitOK)
	require.Equal(t, "acquired \"a\", \"b\" for owner \"o1\"; expires in 30s\n", r.stdout)
	require.Empty(t, r.stderr)

	// Same owner re-enters; another owner is refused with the stock message and exit 3, and
	// the keys it took on the way are given back.
	requireCode(t, run(t, "acquire", "a", "--owner", "o1", "--expire", "30s", "--redis", url), cli.ExitOK)
	r = run(t, "acquire", "c", "b", "--owner", "o2", "--expire", "30s", "--redis", url)
	requireCode(t, r, cli.ExitConflict)
	requireOneErrorLine(t, r, `Failed to acquire lock for key "b"`, `held by "o1"`)
	require.Empty(t, e.holder(t, "c"))
	require.Equal(t, "o1", e.holder(t, "b"))

	// Without --expire the lock never expires (stock semantics) and locktui warns; --expire 0
	// asks for it without the warning.
	r = run(t, "acquire", "p", "--owner", "o1", "--redis", url)
	requireCode(t, r, cli.ExitOK)
	require.Contains(t, r.stdout, "never expires")
	require.Contains(t, r.stderr, "locktui: warning: the lock never expires")
	r = run(t, "acquire", "q", "--owner", "o1", "--expire", "0", "--redis", url)
	requireCode(t, r, cli.ExitOK)
	require.Empty(t, r.stderr)
	for _, key := range []string{"p", "q"} {
		l, _, err := e.ops.Get(context.Background(), key)
		require.NoError(t, err)
		require.Equal(t, provider.NoExpiry, l.TTL)
	}
}

func TestAcquireWait(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	require.NoError(t, e.p.Acquire(ctx, []string{"busy"}, provider.AcquireOptions{Owner: "other", Expire: time.Minute}))

	// Waiting for a key nobody gives back ends after --wait with exit 3.
	r := run(t, "acquire", "busy", "--owner", "me", "--wait", "200ms", "--expire", "30s", "--redis", e.srv.URL)
	requireCode(t, r, cli.ExitConflict)
	requireOneErrorLine(t, r, `Failed to acquire lock for key "busy"`, "after waiting 200ms")

	// A key given back while locktui waits is taken.
	waiting := make(chan struct{}, 1)
	app := newApp(nil, nil)
	app.NewObserver = func(redis.UniversalClient, string) (provider.Observer, func()) {
		return provider.ObserverFunc(func(ev provider.Event) {
			if ev.Kind == provider.EventWaiting {
				select {
				case waiting <- struct{}{}:
				default:
				}
			}
		}), nil
	}
	done := make(chan result, 1)
	go func() {
		done <- runApp(t, app, "acquire", "busy", "--owner", "me", "--wait", "1m", "--expire", "30s", "--redis", e.srv.URL)
	}()
	<-waiting
	released, err := e.p.Release(ctx, []string{"busy"}, "other")
	require.NoError(t, err)
	require.True(t, released)
	r = <-done
	requireCode(t, r, cli.ExitOK)
	require.Equal(t, "me", e.holder(t, "busy"))
}

func TestAcquireWaitInterrupted(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	require.NoError(t, e.p.Acquire(ctx, []string{"b"}, provider.AcquireOptions{Owner: "other", Expire: time.Minute}))
	sigs := make(chan os.Signal, 1)
	app := newApp(nil, nil)
	app.Signals = sigs
	done := make(chan result, 1)
	go func() {
		done <- runApp(t, app, "acquire", "a", "b", "--owner", "me", "--wait", "1m", "--expire", "30s", "--redis", e.srv.URL)
	}()
	// "a" sorts first: once locktui holds it, it is waiting for "b".
	require.Eventually(t, func() bool { return e.holder(t, "a") == "me" }, 10*time.Second, 10*time.Millisecond)
	sigs <- syscall.SIGINT
	r := <-done
	requireCode(t, r, cli.ExitSignalBase+2)
	requireOneErrorLine(t, r, "interrupted by SIGINT while waiting for", `"a", "b"`)
	require.Empty(t, e.holder(t, "a"), "the key taken while waiting is given back")
	require.Equal(t, "other", e.holder(t, "b"))
}

func TestRelease(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	url := e.srv.URL
	require.NoError(t, e.p.Acquire(ctx, []string{"a", "b", "c"}, provider.AcquireOptions{Owner: "o1", Expire: time.Minute}))
	require.NoError(t, e.p.Acquire(ctx, []string{"x"}, provider.AcquireOptions{Owner: "o2", Expire: time.Minute}))

	r := run(t, "release", "a", "b", "--owner", "o1", "--redis", url)
	requireCode(t, r, cli.ExitOK)
	require.Equal(t, "released \"a\"\nreleased \"b\"\n", r.stdout)
	require.Empty(t, e.holder(t, "a"))
	require.Empty(t, e.holder(t, "b"))

	// Not every key matched: the matching ones are released anyway, and the exit code is 3.
	r = run(t, "release", "c", "x", "gone", "--owner", "o1", "--redis", url)
	requireCode(t, r, cli.ExitConflict)
	require.Equal(t, "released \"c\"\n", r.stdout)
	require.Contains(t, r.stderr, `locktui: "x" is held by "o2", not "o1"`)
	require.Contains(t, r.stderr, `locktui: "gone" is not locked`)
	require.Empty(t, e.holder(t, "c"))
	require.Equal(t, "o2", e.holder(t, "x"))

	requireCode(t, run(t, "release", "x", "--owner", "o1", "--redis", url), cli.ExitConflict)
}

func TestForceRelease(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	require.NoError(t, e.p.Acquire(ctx, []string{"a"}, provider.AcquireOptions{Owner: "o1", Expire: time.Minute}))
	require.NoError(t, e.p.Acquire(ctx, []string{"b"}, provider.AcquireOptions{Owner: "execute:xyz"}))
	require.NoError(t, e.srv.Client(t).HSet(ctx, "medusa_lock:hash", "f", "v").Err())

	r := run(t, "release", "--force", "a", "b", "--redis", e.srv.URL)
	requireCode(t, r, cli.ExitOK)
	require.Equal(t, "released \"a\" (owner \"o1\")\nreleased \"b\" (owner \"execute:xyz\")\n", r.stdout)
	require.Empty(t, e.holder(t, "a"))
	require.Empty(t, e.holder(t, "b"))

	r = run(t, "release", "--force", "a", "hash", "--redis", e.srv.URL)
	requireCode(t, r, cli.ExitConflict)
	require.Contains(t, r.stderr, `"a" is not locked`)
	require.Contains(t, r.stderr, `"hash" is not a lock`)
	n, err := e.srv.Client(t).Exists(ctx, "medusa_lock:hash").Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "a foreign key is never deleted")
}

// release --force of a key a live lease holds tells the holder first, then waits for the key to
// be freed (here by the holder, which releases it when told) and says when; --now frees at once.
func TestForceReleaseTellsALeaseFirst(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	lease, err := e.p.AcquireLease(ctx, []string{"k"}, provider.LeaseOptions{Expire: 30 * time.Second})
	require.NoError(t, err)
	go func() {
		<-lease.Done() // told: the holder releases
		_, _ = lease.Release(context.Background())
	}()
	r := run(t, "release", "--force", "k", "--redis", e.srv.URL)
	requireCode(t, r, cli.ExitOK)
	require.Regexp(t, `^told the holder of "k" \(owner "execute:[^"]+"\) at \S+: cli\.test \(pid \d+ on .+\)`+
		`, held since \S+, fencing token \d+\nfreed "k" at \S+, \S+ after its holder was told\n$`, r.stdout)
	require.ErrorIs(t, lease.Err(), provider.ErrRevoked)
	require.Empty(t, e.holder(t, "k"))

	other, err := e.p.AcquireLease(ctx, []string{"k2"}, provider.LeaseOptions{Expire: 30 * time.Second})
	require.NoError(t, err)
	r = run(t, "release", "--force", "--now", "k2", "--redis", e.srv.URL)
	requireCode(t, r, cli.ExitOK)
	require.Regexp(t, `^released "k2" \(owner "execute:[^"]+"\)\n$`, r.stdout)
	require.Empty(t, e.holder(t, "k2"))
	select {
	case <-other.Done(): // it heard the delete
	case <-time.After(10 * time.Second):
		t.Fatal("the holder of a key freed now never heard of it")
	}
}

func TestReleaseAll(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	require.NoError(t, e.p.Acquire(ctx, []string{"a", "b"}, provider.AcquireOptions{Owner: "o1", Expire: time.Minute}))
	require.NoError(t, e.p.Acquire(ctx, []string{"c"}, provider.AcquireOptions{Owner: "*"}))
	require.NoError(t, e.p.Acquire(ctx, []string{"d"}, provider.AcquireOptions{Owner: "o2", Expire: time.Minute}))

	r := run(t, "release-all", "--owner", "o1", "--redis", e.srv.URL)
	requireCode(t, r, cli.ExitOK)
	require.Equal(t, "released 2 locks of owner \"o1\"\n", r.stdout)

	r = run(t, "release-all", "--redis", e.srv.URL, "--owner=*")
	requireCode(t, r, cli.ExitOK)
	require.Equal(t, "released 1 lock of owner \"*\"\n", r.stdout)

	r = run(t, "release-all", "--owner", "nobody", "--redis", e.srv.URL)
	requireCode(t, r, cli.ExitOK)
	require.Equal(t, "released 0 locks of owner \"nobody\"\n", r.stdout)

	locks, err := e.ops.List(ctx)
	require.NoError(t, err)
	require.Len(t, locks, 1)
	require.Equal(t, "d", locks[0].Key)
	require.Equal(t, "o2", locks[0].Owner)
}

// release-all walks the database within the read budget, as list does: on a database of
// 10,000 other keys its SCANs are charged the keys they examine, and it waits for the budget
// (on a virtual clock here) instead of sending them as fast as Redis answers.
func TestReleaseAllIsPacedLikeList(t *testing.T) {
	e := newEnv(t)
	e.fill(t, "mine", "o1", 30, 10_000)

	lim, clock := virtualBudget()
	app := newApp(nil, nil)
	app.Budget = func() *budget.Limiter { return lim }
	r := runApp(t, app, "release-all", "--owner", "o1", "--redis", e.srv.URL, "--audit-log", filepath.Join(t.TempDir(), "a.jsonl"))
	requireCode(t, r, cli.ExitOK)
	require.Equal(t, "released 30 locks of owner \"o1\"\n", r.stdout)

	charged := lim.Charged()
	require.GreaterOrEqual(t, charged, int64(10_000/operator.ScanCount*operator.ScanCount), "every SCAN is charged the keys it examines")
	burst := int64(budget.Default / 10)
	require.GreaterOrEqual(t, clock.Elapsed(), time.Duration(charged-burst)*time.Second/budget.Default,
		"release-all waited for the budget")
}

func TestObserverSeesCommandEvents(t *testing.T) {
	e := newEnv(t)
	var kinds []string
	closed := false
	app := newApp(nil, nil)
	app.NewObserver = func(_ redis.UniversalClient, namespace string) (provider.Observer, func()) {
		require.Equal(t, "medusa_lock:", namespace)
		return provider.ObserverFunc(func(ev provider.Event) {
			kinds = append(kinds, string(ev.Kind)+" "+ev.Key+" "+ev.Owner)
		}), func() { closed = true }
	}
	requireCode(t, runApp(t, app, "acquire", "k", "--owner", "o", "--expire", "9", "--redis", e.srv.URL), cli.ExitOK)
	requireCode(t, runApp(t, app, "release", "k", "--owner", "o", "--redis", e.srv.URL), cli.ExitOK)
	require.Equal(t, "acquired k o,released k o", strings.Join(kinds, ","))
	require.True(t, closed)
}

// A boolean flag takes no separate value: "--force false" would make "false" a key and
// force-release the others, so a lone "true" or "false" after a boolean flag is refused.
func TestBoolFlagFollowedByTrueOrFalse(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	require.NoError(t, e.p.Acquire(ctx, []string{"k", "true"}, provider.AcquireOptions{Owner: "o", Expire: time.Minute}))
	app := newApp(nil, nil)
	app.Console = func(context.Context, cli.ConsoleConfig) error { return nil }
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"release", "k", "--force", "false"}, "--force=false"},
		{[]string{"release", "k", "-force", "true"}, "-force=true"},
		{[]string{"list", "--json", "false"}, "--json=false"},
		{[]string{"--read-only", "false"}, "--read-only=false"},
	} {
		r := runApp(t, app, append(tt.args, "--redis", e.srv.URL)...)
		requireCode(t, r, cli.ExitUsage)
		require.Empty(t, r.stdout)
		requireOneErrorLine(t, r, "takes no separate value", tt.want)
		require.Equal(t, "o", e.holder(t, "k"), "args %q released the key", tt.args)
	}
	// With "=" the value is the flag's; a key called "true" is a key where no boolean flag
	// precedes it.
	r := run(t, "release", "true", "--force=false", "--owner", "o", "--redis", e.srv.URL, "--audit-log", filepath.Join(t.TempDir(), "a"))
	requireCode(t, r, cli.ExitOK)
	require.Equal(t, "released \"true\"\n", r.stdout)
	require.Equal(t, "o", e.holder(t, "k"))
}

// A key of another type under the namespace is "not a lock" for --owner as for --force: a
// conflict (exit 3), not a Redis error, and the other keys are still released.
func TestReleaseOwnerOfAKeyThatIsNotALock(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	require.NoError(t, e.p.Acquire(ctx, []string{"a"}, provider.AcquireOptions{Owner: "o", Expire: time.Minute}))
	require.NoError(t, e.srv.Client(t).HSet(ctx, "medusa_lock:hash", "f", "v").Err())
	r := run(t, "release", "hash", "a", "--owner", "o", "--redis", e.srv.URL)
	requireCode(t, r, cli.ExitConflict)
	require.Equal(t, "released \"a\"\n", r.stdout)
	requireOneErrorLine(t, r, `"hash" is not a lock (a key of another type); not released`)
	require.NotContains(t, r.stderr, "WRONGTYPE")
	n, err := e.srv.Client(t).Exists(ctx, "medusa_lock:hash").Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
}

// A release-all that stops part-way (here its budget's wait fails, as on Ctrl-C) says how many
// locks it had released: the count in its message is what Redis lost.
func TestAReleaseAllThatStopsSaysWhatItReleased(t *testing.T) {
	e := newEnv(t)
	e.fill(t, "mine", "o1", 300, 0)

	lim := budget.New(operator.ScanCount) // every batch of the walk waits for the budget
	waits := 0
	interrupted := errors.New("interrupted")
	lim.SetClock(time.Now, func(context.Context, time.Duration) error {
		if waits++; waits > 3 {
			return interrupted
		}
		return nil
	})
	app := newApp(nil, nil)
	app.Budget = func() *budget.Limiter { return lim }
	r := runApp(t, app, "release-all", "--owner", "o1", "--redis", e.srv.URL, "--audit-log", filepath.Join(t.TempDir(), "a.jsonl"))
	requireCode(t, r, cli.ExitError)
	left, err := e.srv.Client(t).DBSize(context.Background()).Result()
	require.NoError(t, err)
	released := 300 - int(left)
	require.Positive(t, released, "the walk stopped before it released anything: the test proves nothing")
	require.Less(t, released, 300)
	require.Contains(t, r.stderr, fmt.Sprintf("released %d locks of owner \"o1\", then stopped: ", released))
	require.Contains(t, r.stderr, "interrupted")
}
