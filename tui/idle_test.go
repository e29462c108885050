package tui

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/budget"
	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/tui/source"
)

// notifyArgs turn on the keyspace notifications the console uses (docs/console-cost.md).
var notifyArgs = []string{"--notify-keyspace-events", "Kg$xe"}

// consoleCalls is what the server executed so far, INFO left out (the measurements' own INFO
// commandstats, and the console's once per connection): the commands, and their cost in the
// units of the budget (a SCAN counts as the keys it examines).
func consoleCalls(t testing.TB, client *redis.Client) (cmds, cost int64) {
	t.Helper()
	calls, err := source.New(source.Options{Client: client}).CommandCalls(t.Context())
	require.NoError(t, err)
	cmds = calls.Total() - calls["info"]
	return cmds, cmds + calls["scan"]*(source.ScanCount-1)
}

// awaitRefreshes waits up to within until the console finished n full refreshes.
func (c *console) awaitRefreshes(n int64, within time.Duration) {
	c.t.Helper()
	require.Eventually(c.t, func() bool { return c.refreshes.Load() >= n }, within, 10*time.Millisecond,
		"the console never finished %d full refreshes (%d done)", n, c.refreshes.Load())
}

func TestIdleKeyspaceEventsShowNewAndReleasedLocksWithoutARescan(t *testing.T) {
	srv := redistest.StartWith(t, redistest.Config{Args: notifyArgs})
	client := srv.Client(t)
	ctx := t.Context()
	require.NoError(t, client.Set(ctx, "medusa_lock:first", "o", time.Minute).Err())
	sent := &redistest.Recorder{}
	client.AddHook(sent)
	c := startConsole(t, Config{Client: client, URL: srv.URL, NoEvents: true})
	c.await("first", "keyspace events + rescan 5m00s")
	c.awaitRefreshes(1, waitFor)
	scans := sent.Count("scan")

	require.NoError(t, client.Set(ctx, "medusa_lock:second", "p", time.Minute).Err())
	c.await("second", "2 locks")
	require.NoError(t, client.Del(ctx, "medusa_lock:first").Err())
	c.awaitMatch(`GONE +first`)
	assert.Equal(t, scans, sent.Count("scan"), "the changes came from notifications, not a SCAN")
	assert.Equal(t, int64(1), c.refreshes.Load(), "no full refresh after the first")
	c.quit()
}

// Pub/sub delivers at most once: a change whose notification never came (here: published
// while the server had notifications off) is repaired by the next drift rescan.
func TestIdleDriftRescanRepairsLostNotifications(t *testing.T) {
	srv := redistest.StartWith(t, redistest.Config{Args: notifyArgs})
	client := srv.Client(t)
	ctx := t.Context()
	require.NoError(t, client.Set(ctx, "medusa_lock:released", "o", time.Minute).Err())
	c := startConsole(t, Config{Client: client, URL: srv.URL, NoEvents: true, KeyspacePoll: time.Second})
	c.await("released", "keyspace events + rescan 1s")
	before := c.refreshes.Load()

	require.NoError(t, client.ConfigSet(ctx, "notify-keyspace-events", "").Err())
	require.NoError(t, client.Set(ctx, "medusa_lock:unseen", "p", time.Minute).Err())
	require.NoError(t, client.Del(ctx, "medusa_lock:released").Err())
	require.NoError(t, client.ConfigSet(ctx, "notify-keyspace-events", notifyArgs[1]).Err())

	c.await("unseen")
	c.awaitMatch(`GONE +released`)
	// The table is the hub's and may be drawn before the watcher's update that counts the
	// refresh reaches the program: await the count rather than read it once.
	c.awaitRefreshes(before+1, waitFor) // a full refresh found what no notification said
	c.quit()
}

// A lock whose expiry was never announced (here: the server stopped publishing the expiry
// class after the console checked it) does not sit at 0.0s until the drift rescan: when its
// countdown reaches zero the console reads that key at once and shows it GONE.
func TestIdleCountdownAtZeroRereadsTheKey(t *testing.T) {
	srv := redistest.StartWith(t, redistest.Config{Args: notifyArgs})
	client := srv.Client(t)
	ctx := t.Context()
	sent := &redistest.Recorder{}
	client.AddHook(sent)
	c := startConsole(t, Config{Client: client, URL: srv.URL, NoEvents: true, KeyspacePoll: time.Hour})
	c.await("keyspace events + rescan 1h")
	c.awaitRefreshes(1, waitFor)
	scans := sent.Count("scan")

	require.NoError(t, client.ConfigSet(ctx, "notify-keyspace-events", "Kg$").Err())
	require.NoError(t, client.Set(ctx, "medusa_lock:short", "o", time.Second).Err())
	c.await("short")
	c.awaitMatch(`GONE +short`)
	assert.Equal(t, int64(1), c.refreshes.Load(), "a read of the key, not a full refresh")
	assert.Equal(t, scans, sent.Count("scan"), "no SCAN after the first refresh")
	c.quit()
}

// What the console sends while nothing changes, counted by the server (INFO commandstats)
// over a window after the first full table: with notifications, the heartbeat and little
// else; without, polling within the stated budget.
func TestIdleCommandCountOverAWindow(t *testing.T) {
	const locks = 2000
	const window = 3 * time.Second
	for _, tc := range []struct {
		name    string
		args    []string
		mode    string
		bound   int64
		atLeast int64
	}{
		// PING once a second, go-redis' health check of an idle subscription every 3 s: a
		// handful. Polling 2,000 locks once a second would send ~4,000 a second.
		{name: "notifications", args: notifyArgs, mode: "keyspace events + rescan", bound: 30},
		// Polling re-reads 2,000 locks (4,000 commands) once a second, within the budget.
		{name: "polling", mode: "poll 1s", bound: int64(budget.Default*window/time.Second) * 11 / 10,
			atLeast: 2 * locks},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.StartWith(t, redistest.Config{Args: tc.args})
			client := srv.Client(t)
			ctx := t.Context()
			pipe := client.Pipeline()
			for i := range locks {
				pipe.Set(ctx, fmt.Sprintf("medusa_lock:cart:%04d", i), "o", time.Hour)
			}
			_, err := pipe.Exec(ctx)
			require.NoError(t, err)
			c := startConsole(t, Config{Client: client, URL: srv.URL, NoEvents: true})
			c.await(tc.mode, "2,000 locks")
			c.awaitRefreshes(1, waitFor)

			start, _ := consoleCalls(t, client)
			time.Sleep(window) // a measurement window, not a wait for a condition
			end, _ := consoleCalls(t, client)
			sent := end - start
			t.Logf("%s: %d commands in %s", tc.name, sent, window)
			assert.LessOrEqual(t, sent, tc.bound)
			assert.GreaterOrEqual(t, sent, tc.atLeast)
			c.quit()
		})
	}
}
