//go:build linux

package main_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
)

// TestBinaryRunCommandDiesWithLocktui kills locktui run with SIGKILL, as the OOM killer or kill -9
// would: the command must die with it (Pdeathsig), or it would go on running without the lock
// once the lease expires and someone else takes the key.
func TestBinaryRunCommandDiesWithLocktui(t *testing.T) {
	srv := redistest.Start(t)
	pidfile := filepath.Join(t.TempDir(), "pid")
	// The command writes its pid (atomically, via rename) and becomes sleep: the same process.
	script := `echo $$ > "$1.tmp" && mv "$1.tmp" "$1" && exec sleep 60`
	cmd := exec.Command(locktui, "run", "orphan", "--expire", "3s", "--redis", srv.URL, "--",
		"sh", "-c", script, "sh", pidfile)
	cmd.Env = withoutRedisURL()
	// A file, not a buffer: a pipe would keep cmd.Wait waiting for an orphaned command.
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	require.NoError(t, err)
	defer stderr.Close()
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())

	var pid int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(pidfile)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(string(bytes.TrimSpace(b)))
		return err == nil
	}, 10*time.Second, 10*time.Millisecond, "the command never wrote its pid")
	t.Cleanup(func() {
		if alive(pid) { // the command outlived locktui: do not leave it behind
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	require.True(t, alive(pid))
	l, held, err := operator.New(srv.Client(t), nil).Get(context.Background(), "orphan")
	require.NoError(t, err)
	require.True(t, held, "the lock is held while the command runs")
	require.Contains(t, l.Owner, provider.ExecuteOwnerPrefix)

	require.NoError(t, cmd.Process.Kill())
	err = cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, syscall.SIGKILL, ee.Sys().(syscall.WaitStatus).Signal())

	require.Eventually(t, func() bool { return !alive(pid) }, 5*time.Second, 20*time.Millisecond,
		"the command (pid %d) still runs after locktui was killed", pid)
}

// alive reports whether process pid exists and is not a zombie (an orphan killed here may stay a
// zombie when PID 1 does not reap it; it no longer runs).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state is the field after the ")" that closes the command name.
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}
