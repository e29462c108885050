//go:build unix

package tui

import (
	"bufio"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/testsupport/redistest"
)

// serverPID returns the process id of the redis-server client talks to.
func serverPID(t *testing.T, client *redis.Client) int {
	t.Helper()
	info, err := client.Info(t.Context(), "server").Result()
	require.NoError(t, err)
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "process_id:"); ok {
			pid, err := strconv.Atoi(strings.TrimSpace(v))
			require.NoError(t, err)
			return pid
		}
	}
	t.Fatal("no process_id in INFO server")
	return 0
}

// A Redis that accepts connections but never answers (here: stopped with SIGSTOP) must not
// hold the console open: q quits while a refresh waits for its reply.
func TestIntegrationQuitWhileRedisIsStalled(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client(t)
	ctx := t.Context()
	require.NoError(t, admin.Set(ctx, "medusa_lock:cart:1", "owner-a", time.Hour).Err())
	pid := serverPID(t, admin)
	// As redisconn makes it (context deadlines cut I/O), with a read timeout far longer than
	// the test: only the console's own bounds can end its waits on the stalled server.
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true,
		ReadTimeout: time.Minute, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	watch := &redistest.Recorder{}
	client.AddHook(watch)

	c := startConsole(t, Config{Client: client, URL: srv.URL}) // with the event subscription
	c.await("cart:1", "1 lock", "· events")
	scans := watch.Count("scan")
	require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) }) // runs first: the server ends normally
	// A refresh sent now waits for a reply that does not come.
	require.Eventually(t, func() bool { return watch.Count("scan") > scans }, waitFor, 10*time.Millisecond,
		"no refresh was sent to the stalled server")
	c.quit()
}
