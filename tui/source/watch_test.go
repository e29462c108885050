package source_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/tui/source"
)

// watching is a Watcher running until the test ends, with what it handed out.
type watching struct {
	t *testing.T
	w *source.Watcher

	mu      sync.Mutex
	last    source.Status
	notices []string
	seen    []source.Status
}

func watch(t *testing.T, client redis.UniversalClient, budget int, opts source.WatchOptions) *watching {
	t.Helper()
	src := source.New(source.Options{Client: client, Budget: budget})
	hub := source.NewHub()
	wt := &watching{t: t, w: source.NewWatcher(src, hub, opts)}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { wt.w.Run(ctx) })
	wg.Go(func() {
		for {
			u, ok := wt.w.Next(ctx)
			if !ok {
				return
			}
			wt.mu.Lock()
			wt.last = u.Status
			wt.seen = append(wt.seen, u.Status)
			if u.Notice != "" {
				wt.notices = append(wt.notices, u.Notice)
			}
			wt.mu.Unlock()
		}
	})
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return wt
}

// await waits until ok holds for the latest status; what describes the wait.
func (wt *watching) await(what string, ok func(st source.Status) bool) source.Status {
	wt.t.Helper()
	var st source.Status
	require.Eventually(wt.t, func() bool {
		wt.mu.Lock()
		defer wt.mu.Unlock()
		st = wt.last
		return ok(st)
	}, 15*time.Second, 5*time.Millisecond, "the watcher never reported %s", what)
	return st
}

// noticed reports whether a notice containing s was handed out.
func (wt *watching) noticed(s string) bool {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	for _, n := range wt.notices {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// A keyspace subscription refused (here by an ACL) releases the first refresh it held, and the
// console polls.
func TestWatcherPollsWhenTheKeyspaceSubscriptionIsRefused(t *testing.T) {
	srv := redistest.StartWith(t, redistest.Config{Args: []string{"--notify-keyspace-events", "KA"}})
	admin := srv.Client(t)
	ctx := t.Context()
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "console", "on", ">pw", "~*", "resetchannels", "+@all").Err())
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "console", Password: "pw"})
	t.Cleanup(func() { _ = client.Close() })

	wt := watch(t, client, 0, source.WatchOptions{Refresh: time.Hour, KeyspacePoll: time.Hour})
	st := wt.await("a refresh", func(st source.Status) bool { return st.Loaded() })
	assert.True(t, st.Conn.Info.Keyspace(), "the server publishes notifications")
	assert.Error(t, st.Keyspace.Err, "but this user may not subscribe")
	assert.False(t, st.Keyspace.On)
	assert.Equal(t, time.Hour, st.Interval, "polling, not the drift rescan")
	assert.True(t, wt.noticed("keyspace notifications unavailable, polling only"))
}

// A refresh asked for while one runs follows it at once (it may have walked past the keys
// concerned); with notifications live, the first refresh waits for their subscription, so
// there is one, not two.
func TestWatcherRefreshAskedDuringARefreshFollowsIt(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	ctx := t.Context()
	pipe := client.Pipeline()
	for i := range 30 {
		pipe.Set(ctx, fmt.Sprintf("medusa_lock:k%02d", i), "o", time.Hour)
	}
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)

	// 200 units a second: the refresh (one SCAN, 100, and 90 reads) takes about a second.
	wt := watch(t, client, 200, source.WatchOptions{Refresh: time.Hour})
	wt.await("a refresh under way", func(st source.Status) bool { return st.Scanning })
	wt.w.Refresh()
	wt.await("a second refresh", func(st source.Status) bool { return st.Refreshes == 2 })
}

// Redis back after an outage: the watcher says it was down, and refreshes once it answers,
// without waiting for the poll interval.
func TestWatcherRefreshesWhenRedisAnswersAgain(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	wt := watch(t, client, 0, source.WatchOptions{Refresh: time.Hour})
	wt.await("a refresh", func(st source.Status) bool { return st.Refreshes == 1 })
	srv.Restart(t, 3*time.Second) // longer than go-redis retries a PING
	wt.await("the second refresh", func(st source.Status) bool { return st.Refreshes == 2 && !st.Conn.Down })
	wt.mu.Lock()
	down := false
	for _, st := range wt.seen {
		down = down || st.Conn.Down
	}
	wt.mu.Unlock()
	assert.True(t, down, "the outage was reported")
	assert.True(t, wt.noticed("Redis answers again"))
}

// A sampling run reads its keys every step until stopped (or its time is over).
func TestWatcherSamplesUntilStopped(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	require.NoError(t, client.Set(t.Context(), "medusa_lock:cart:1", "o", time.Minute).Err())
	src := source.New(source.Options{Client: client})
	wt := watch(t, client, 0, source.WatchOptions{Refresh: time.Hour})
	id := wt.w.Sample(src.NewSampler([]string{"cart:1"}))
	require.NotZero(t, id)
	wt.await("a sampling step", func(st source.Status) bool {
		return st.Sample.ID == id && st.Sample.Stats.Commands > 0
	})
	assert.Zero(t, wt.w.Sample(nil))
	wt.await("the run stopped", func(st source.Status) bool { return st.Sample.ID == 0 })
	assert.Zero(t, wt.w.Status().SampleDone, "stopped, not ended by itself")
}
