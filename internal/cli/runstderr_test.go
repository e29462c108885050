package cli_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/cli"
	"github.com/locktui/locktui/internal/testsupport"
	"github.com/locktui/locktui/internal/testsupport/faultproxy"
)

// stuckWriter is a stderr nobody reads (a full pipe, a blocking log driver): every Write waits
// until unstick, then is recorded.
type stuckWriter struct {
	stuck chan struct{}
	once  sync.Once
	testsupport.Buffer
}

func (w *stuckWriter) Write(p []byte) (int, error) {
	<-w.stuck
	return w.Buffer.Write(p)
}

func (w *stuckWriter) unstick() { w.once.Do(func() { close(w.stuck) }) }

// Defect (issue 17): run wrote its warning before it signalled, so on a stderr nobody read the
// write blocked and the command was never stopped: another process took the key when its TTL
// ran out while the command still ran. run now signals first, and its own lines (and the
// provider's warnings) never wait for stderr.
func TestRunStopsTheCommandWhenItsStderrIsNotRead(t *testing.T) {
	e := newEnv(t)
	px := faultproxy.StartT(t, e.srv.Addr)
	exited := aliveUntilEOF(t)
	stderr := &stuckWriter{stuck: make(chan struct{})}
	t.Cleanup(stderr.unstick)
	stdout := newSignalWriter("ready\n")
	app := newApp(nil, nil)
	app.Stdout, app.Stderr = stdout, stderr
	code := make(chan int, 1)
	go func() {
		// An ignored signal stays ignored across exec, so only SIGKILL stops sleep; it inherits fd 3.
		code <- app.Run(t.Context(), []string{"run", "k", "--expire", "3s", "--grace", "700ms",
			"--redis", "redis://" + px.Addr(), "--", "sh", "-c", `trap "" TERM; exec 3>"$0"; echo ready; exec sleep 30`, exited.fifo})
	}()
	select {
	case <-stdout.ready:
	case c := <-code:
		t.Fatalf("locktui exited %d before the command was ready", c)
	}
	owner := e.holder(t, "k")
	require.NotEmpty(t, owner)

	px.Blackhole(faultproxy.Upstream)
	px.Blackhole(faultproxy.Downstream)
	select {
	case <-exited.c:
	case <-time.After(time.Minute):
		t.Fatal("the command still runs a minute after the link went silent")
	}
	e.requireStillHeld(t, "k", owner, "")

	px.Restore(faultproxy.Upstream)
	px.Restore(faultproxy.Downstream)
	stderr.unstick()
	require.Equal(t, cli.ExitLockLost, <-code)
	require.Contains(t, stderr.String(), "locktui: the command still ran at the lease's deadline; sent SIGKILL")
}
