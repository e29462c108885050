//go:build linux

package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestChildrenDieWithTheTestBinary: a test binary killed from outside (SIGKILL, a CI timeout)
// takes the processes it started with it, so no chaos holder or bridge goes on taking locks
// after the run. The helper stands for the test binary: it is SIGKILLed, and the child it
// started must be gone soon after.
func TestChildrenDieWithTheTestBinary(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), helperEnv+"="+spawnHelper)
	pids := make(chan string, 1)
	helper := startProc(t, "spawn helper", cmd, procOptions{onStdout: func(line string) { pids <- line }})
	var child int
	select {
	case line := <-pids:
		child, err = strconv.Atoi(line)
		require.NoError(t, err, "helper printed %q", line)
	case <-helper.done:
		t.Fatalf("spawn helper exited: %v", helper.err)
	case <-time.After(lockWaitSeconds * time.Second):
		t.Fatal("spawn helper printed no pid")
	}
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	require.True(t, alive(child), "the helper's child runs before the helper dies")

	helper.kill()
	require.Eventually(t, func() bool { return !alive(child) }, lockWaitSeconds*time.Second, 10*time.Millisecond,
		"the child of a killed test binary must die with it")
}

// alive reports whether pid names a process that has not ended (a zombie waiting for its new
// parent to reap it counts as ended).
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and may contain spaces.
	_, rest, ok := bytes.Cut(stat, []byte(") "))
	return ok && !strings.HasPrefix(string(rest), "Z")
}
