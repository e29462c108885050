package stocknode_test

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/locktui/locktui/internal/nodeproc"
	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/internal/testsupport/stocknode"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestDriver checks the helper itself against one stock provider: the reported versions and
// module-level tuning, typed calls, stock errors, hold jobs and bad requests.
func TestDriver(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	d := stocknode.Start(t, srv.URL, &stocknode.Options{
		Namespace:     "drv:",
		ModuleOptions: map[string]any{"waitLockingTimeout": 7},
		Trace:         true,
	})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	t.Run("info", func(t *testing.T) {
		require.Equal(t, "2.21.2", d.Info.Versions.LockingRedis)
		require.Equal(t, "drv:", d.Info.Namespace)
		require.EqualValues(t, 7, d.Info.Tuning.WaitLockingTimeout, "module-level options reach the provider")
		require.EqualValues(t, 20, d.Info.Tuning.DefaultRetryInterval)
	})

	t.Run("acquire, conflict, release", func(t *testing.T) {
		acquired := d.WatchScript("acquireLock", "drv:k", 1)
		require.NoError(t, d.Acquire(ctx, []string{"k"}, stocknode.AcquireArgs{OwnerID: "o1", Expire: 10}))
		ev, err := d.AwaitEvent(ctx, acquired)
		require.NoError(t, err)
		require.Equal(t, []string{"o1", "10", "false"}, ev.Args)
		require.Equal(t, "o1", rdb.Get(ctx, "drv:k").Val())

		err = d.Acquire(ctx, []string{"k"}, stocknode.AcquireArgs{OwnerID: "o2"})
		var se *stocknode.Error
		require.ErrorAs(t, err, &se)
		require.Equal(t, stocknode.Error{Type: "conflict", Message: `Failed to acquire lock for key "k"`, Name: "Error", Medusa: true}, *se)

		ok, err := d.Release(ctx, []string{"k"}, "o2")
		require.NoError(t, err)
		require.False(t, ok)
		ok, err = d.Release(ctx, []string{"k"}, "o1")
		require.NoError(t, err)
		require.True(t, ok)
	})

	t.Run("execute a value", func(t *testing.T) {
		res, err := d.Execute(ctx, []string{"v"}, stocknode.ValueJob(map[string]int{"n": 42}), stocknode.ExecuteArgs{})
		require.NoError(t, err)
		require.JSONEq(t, `{"n":42}`, string(res))
	})

	t.Run("hold job", func(t *testing.T) {
		e, err := d.ExecuteAsync([]string{"h"}, stocknode.HoldJob("h1"), stocknode.ExecuteArgs{})
		require.NoError(t, err)
		require.NoError(t, e.Started(ctx))
		require.Contains(t, rdb.Get(ctx, "drv:h").Val(), "execute:")
		require.NoError(t, e.Finish(ctx))
		res, err := e.Wait(ctx)
		require.NoError(t, err)
		var hr stocknode.HoldResult
		require.NoError(t, json.Unmarshal(res, &hr))
		require.False(t, hr.Aborted)
		require.Zero(t, rdb.Exists(ctx, "drv:h").Val(), "execute releases its key")
	})

	t.Run("job error passes through", func(t *testing.T) {
		e, err := d.ExecuteAsync([]string{"h"}, stocknode.HoldJob("h2"), stocknode.ExecuteArgs{})
		require.NoError(t, err)
		require.NoError(t, e.Started(ctx))
		require.NoError(t, e.Throw(ctx, "boom"))
		_, err = e.Wait(ctx)
		require.EqualError(t, err, "boom")
	})

	t.Run("bad requests get an error reply", func(t *testing.T) {
		var se *stocknode.Error
		require.ErrorAs(t, d.Call(ctx, "nope", nil, nil), &se)
		require.Contains(t, se.Message, `unknown op "nope"`)
		_, err := d.Execute(ctx, []string{"x"}, stocknode.Job{Kind: "dance"}, stocknode.ExecuteArgs{})
		require.ErrorAs(t, err, &se)
		require.Contains(t, se.Message, `unknown job kind "dance"`)
		require.ErrorAs(t, d.Call(ctx, "finish", map[string]any{"name": "ghost"}, nil), &se)
		require.NoError(t, d.Call(ctx, "ping", nil, nil), "the driver survives bad requests")
	})

	t.Run("a cancelled call returns the context error", func(t *testing.T) {
		require.NoError(t, d.Acquire(ctx, []string{"busy"}, stocknode.AcquireArgs{OwnerID: "holder", Expire: 30}))
		short, cancelShort := context.WithCancel(ctx)
		e, err := d.ExecuteAsync([]string{"busy"}, stocknode.ValueJob(1), stocknode.ExecuteArgs{Timeout: 30})
		require.NoError(t, err)
		cancelShort()
		_, err = e.Wait(short)
		require.ErrorIs(t, err, context.Canceled)
		ok, err := d.Release(ctx, []string{"busy"}, "holder")
		require.NoError(t, err)
		require.True(t, ok)
		_, err = e.Wait(ctx)
		require.NoError(t, err, "the execute still completes in Node")
	})

	// Last: closing stdin ends running hold jobs and the process; later calls fail, not hang.
	t.Run("closing stdin ends the driver", func(t *testing.T) {
		e, err := d.ExecuteAsync([]string{"last"}, stocknode.HoldJob("last"), stocknode.ExecuteArgs{})
		require.NoError(t, err)
		require.NoError(t, e.Started(ctx))
		require.NoError(t, d.CloseInput())
		_, err = e.Wait(ctx)
		require.EqualError(t, err, "stock driver: stdin closed")
		require.Zero(t, rdb.Exists(ctx, "drv:last").Val(), "the ended execute released its key")
		require.Eventually(t, func() bool {
			return errors.Is(d.Call(ctx, "ping", nil, nil), stocknode.ErrExited)
		}, 30*time.Second, 20*time.Millisecond)
	})
}

// TestCheckDeps: a compat/ without node_modules gets the install hint.
func TestCheckDeps(t *testing.T) {
	err := nodeproc.CheckDeps(t.TempDir(), stocknode.Packages...)
	require.ErrorContains(t, err, "@medusajs/locking-redis is not installed")
	require.ErrorContains(t, err, nodeproc.DepsHint)

	compat, err := stocknode.CompatDir()
	require.NoError(t, err)
	require.NoError(t, nodeproc.CheckDeps(compat, stocknode.Packages...), "compat/node_modules is installed: %s", nodeproc.DepsHint)
}

// TestDriverBadConfig: the driver answers a bad config with a one-line error and exit code 2.
func TestDriverBadConfig(t *testing.T) {
	compat, err := stocknode.CompatDir()
	require.NoError(t, err)
	for _, arg := range []string{"not json", `{"redisUrl":""}`} {
		cmd, err := nodeproc.Command(compat, stocknode.Script, arg)
		require.NoError(t, err)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err = cmd.Run()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "config %q", arg)
		require.Equal(t, 2, exit.ExitCode(), "config %q", arg)
		msg := strings.TrimSpace(stderr.String())
		require.NotContains(t, msg, "\n", "one line for config %q", arg)
		require.Contains(t, msg, `"redisUrl"`, "config %q", arg)
	}
}
