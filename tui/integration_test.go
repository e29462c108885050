package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/audit"
	"github.com/locktui/locktui/events"
	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
	"github.com/locktui/locktui/redisconn"
	"github.com/locktui/locktui/tui/source"
)

// waitFor bounds every wait of the integration tests.
const waitFor = 15 * time.Second

// console is the program running headless: keys go in through a pipe, the screen is captured
// on the event loop before each message.
type console struct {
	t      testing.TB
	keys   *io.PipeWriter
	screen atomic.Value // string
	done   chan error
	cancel context.CancelFunc

	started time.Time
	// refreshes counts the full refreshes done; first is the first one's stats, and
	// firstAfter how long after the start it ended (the time to a full table).
	refreshes  atomic.Int64
	first      atomic.Pointer[source.ScanStats]
	firstAfter atomic.Int64 // time.Duration
}

func startConsole(t testing.TB, cfg Config) *console {
	t.Helper()
	pr, pw := io.Pipe()
	cfg.Stdin, cfg.Stdout = pr, io.Discard
	ctx, cancel := context.WithCancel(t.Context())
	c := &console{t: t, keys: pw, done: make(chan error, 1), cancel: cancel, started: time.Now()}
	c.screen.Store("")
	capture := func(m tea.Model, msg tea.Msg) tea.Msg {
		if u, ok := msg.(source.Update); ok && int64(u.Status.Refreshes) > c.refreshes.Load() {
			if c.refreshes.Swap(int64(u.Status.Refreshes)) == 0 {
				c.firstAfter.Store(int64(time.Since(c.started)))
				c.first.Store(&u.Status.LastScan)
			}
		}
		c.screen.Store(ansi.Strip(m.(*model).render()))
		return msg
	}
	go func() {
		c.done <- run(ctx, cfg, tea.WithWindowSize(100, 30), tea.WithFilter(capture), tea.WithoutSignalHandler())
	}()
	t.Cleanup(func() {
		cancel()
		_ = pw.Close()
		select {
		case <-c.done:
		case <-time.After(waitFor):
			t.Error("the console did not stop")
		}
	})
	return c
}

func (c *console) press(keys string) {
	c.t.Helper()
	_, err := c.keys.Write([]byte(keys))
	require.NoError(c.t, err)
}

// await waits until the screen contains every one of want.
func (c *console) await(want ...string) {
	c.t.Helper()
	ok := assert.Eventually(c.t, func() bool {
		s := c.screen.Load().(string)
		for _, w := range want {
			if !strings.Contains(s, w) {
				return false
			}
		}
		return true
	}, waitFor, 10*time.Millisecond, "screen never showed %q", want)
	if !ok {
		c.t.Fatalf("last screen:\n%s", c.screen.Load())
	}
}

// awaitMatch waits until the screen matches the regular expression re.
func (c *console) awaitMatch(re string) {
	c.t.Helper()
	rx := regexp.MustCompile(re)
	ok := assert.Eventually(c.t, func() bool { return rx.MatchString(c.screen.Load().(string)) },
		waitFor, 10*time.Millisecond, "screen never matched %s", re)
	if !ok {
		c.t.Fatalf("last screen:\n%s", c.screen.Load())
	}
}

// awaitScreen waits until ok holds for the screen; what describes the wait.
func (c *console) awaitScreen(what string, ok func(screen string) bool) {
	c.t.Helper()
	if !assert.Eventually(c.t, func() bool { return ok(c.screen.Load().(string)) }, waitFor, 10*time.Millisecond,
		"screen never showed %s", what) {
		c.t.Fatalf("last screen:\n%s", c.screen.Load())
	}
}

// quit presses q and waits for Run to return; it must return nil.
func (c *console) quit() {
	c.t.Helper()
	c.press("q")
	select {
	case err := <-c.done:
		require.NoError(c.t, err)
		c.done <- nil // for the cleanup
	case <-time.After(waitFor):
		c.t.Fatal("q did not quit")
	}
}

func TestIntegrationForceReleaseOnlyIfOwnerUnchanged(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	ctx := t.Context()
	require.NoError(t, client.Set(ctx, "medusa_lock:cart:1", "owner-a", time.Minute).Err())
	sink := &memorySink{}
	c := startConsole(t, Config{Client: client, URL: srv.URL, Audit: sink, Operator: "op@host", NoEvents: true})
	c.await("cart:1", "owner-a", "1 lock")

	c.press("d")
	c.await("Force-release this lock?", `owner  "owner-a"`)
	// The owner changes while the operator reads the dialog.
	require.NoError(t, client.Set(ctx, "medusa_lock:cart:1", "owner-b", time.Minute).Err())
	c.press("y")
	c.await(`not released: owner of cart:1 changed to "owner-b"`)
	got, err := client.Get(ctx, "medusa_lock:cart:1").Result()
	require.NoError(t, err)
	assert.Equal(t, "owner-b", got, "another owner's lock is never deleted")

	c.awaitMatch(`cart:1 +owner-b +no record +\d`) // the table, not the notice
	c.press("d")
	c.await(`owner  "owner-b"`)
	c.press("y")
	c.await(`released cart:1 (owner "owner-b")`)
	assert.Zero(t, client.Exists(ctx, "medusa_lock:cart:1").Val())

	recs := sink.all()
	require.Len(t, recs, 2)
	assert.Equal(t, audit.ActionForceRelease, recs[0].Action)
	assert.Equal(t, "owner-a", recs[0].Owner)
	assert.Equal(t, audit.ResultNotHeld, recs[0].Result)
	assert.Equal(t, 0, recs[0].Count)
	assert.Equal(t, "owner-b", recs[1].Owner)
	assert.Equal(t, audit.ResultReleased, recs[1].Result)
	assert.Equal(t, 1, recs[1].Count)
	assert.Equal(t, "op@host", recs[1].Operator)
	assert.Equal(t, "cart:1", recs[1].Key)
	c.quit()
}

// d releases the hold the dialog showed: a hold its owner took since (an owner id that several
// holds share) is spared, and the next d shows and releases that one.
func TestIntegrationForceReleaseSparesANewHoldOfTheSameOwner(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	ctx := t.Context()
	p := provider.New(client, &provider.Options{Holder: provider.Holder{Host: "web-1", PID: 4242, Program: "medusa-worker"}})
	take := func() int64 {
		t.Helper()
		tokens, err := p.AcquireTokens(ctx, []string{"cart:1"}, provider.AcquireOptions{Owner: "svc", Expire: time.Minute})
		require.NoError(t, err)
		return tokens["cart:1"]
	}
	first := take()
	sink := &memorySink{}
	c := startConsole(t, Config{Client: client, URL: srv.URL, Audit: sink, NoEvents: true})
	c.await("cart:1", "svc", "1 lock")

	c.press("d")
	c.await("Force-release this lock?", fmt.Sprintf("token  %d", first))
	ok, err := p.Release(ctx, []string{"cart:1"}, "svc") // the holder finishes and takes it again
	require.NoError(t, err)
	require.True(t, ok)
	second := take()
	c.press("y")
	c.await(`not released: cart:1 changed since the dialog (owner "svc"): press d again`)
	l, held, err := operator.New(client, nil).Get(ctx, "cart:1")
	require.NoError(t, err)
	require.True(t, held, "the new hold is not cut off")
	require.Equal(t, second, l.Record.FencingToken)

	c.press("d")
	c.await(fmt.Sprintf("token  %d", second))
	c.press("y")
	c.await(`released cart:1 (owner "svc")`)
	assert.Zero(t, client.Exists(ctx, "medusa_lock:cart:1").Val())
	recs := sink.all()
	require.Len(t, recs, 2)
	assert.Equal(t, audit.ResultNotHeld, recs[0].Result)
	assert.Empty(t, recs[0].Holder, "nothing was cut off")
	assert.Equal(t, audit.ResultReleased, recs[1].Result)
	assert.Contains(t, recs[1].Holder, fmt.Sprintf("fencing token %d", second))
	c.quit()
}

func TestIntegrationReleaseAllAndAuditFailure(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	ctx := t.Context()
	for _, k := range []string{"a", "b", "c"} {
		require.NoError(t, client.Set(ctx, "medusa_lock:"+k, "svc-1", time.Minute).Err())
	}
	require.NoError(t, client.Set(ctx, "medusa_lock:z", "svc-2", time.Minute).Err())
	sink := &memorySink{err: io.ErrShortWrite}
	c := startConsole(t, Config{Client: client, URL: srv.URL, Audit: sink, NoEvents: true})
	c.await("4 locks")
	c.press("2") // owners: svc-1 first (most keys)
	c.await("svc-1", "svc-2")
	c.press("D")
	c.await("Release all 3 locks of this owner?")
	c.press("y")
	c.await(`AUDIT FAILED for owner "svc-1"`, `released 3 locks of "svc-1"`)
	assert.Equal(t, int64(1), client.Exists(ctx, "medusa_lock:a", "medusa_lock:z").Val(), "only svc-1's locks")
	c.quit()
}

// Stock Medusa stores ownerId "" as the owner "". D must not release it in bulk (ReleaseAllWith,
// as stock's releaseAll, would take "" for "*" and delete the anonymous locks); d
// compare-and-deletes against "" itself.
func TestIntegrationEmptyOwner(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	ctx := t.Context()
	for _, k := range []string{"blank:1", "blank:2"} {
		require.NoError(t, client.Set(ctx, "medusa_lock:"+k, "", time.Minute).Err())
	}
	require.NoError(t, client.Set(ctx, "medusa_lock:anon", "*", time.Minute).Err())
	sink := &memorySink{}
	c := startConsole(t, Config{Client: client, URL: srv.URL, Audit: sink, NoEvents: true})
	c.await("3 locks")
	c.press("2") // owners: "" first (most keys)
	// "3 locks" may be the first refresh's progress, and OWNER the locks view's column: wait
	// for the owners view with "" selected before D acts on it.
	c.await(`owner "" · 2 locks`)
	c.press("D")
	c.await(`the empty owner "" cannot be released in bulk`)
	c.press("y") // no dialog is open: y does nothing
	assert.Equal(t, int64(3), client.Exists(ctx, "medusa_lock:blank:1", "medusa_lock:blank:2", "medusa_lock:anon").Val(),
		"D on the empty owner deletes nothing, least of all the anonymous lock")

	c.press("1/=blank:1\r")
	// The filter is applied by the hub, keystroke by keystroke: wait for the View of the
	// whole filter before d picks its row.
	c.awaitScreen("blank:1 alone", func(s string) bool {
		return regexp.MustCompile(`blank:1 +\d`).MatchString(s) && !strings.Contains(s, "blank:2") && !strings.Contains(s, "anon")
	})
	c.press("d")
	c.await("Force-release this lock?", `owner  ""`)
	c.press("y")
	c.await(`released blank:1 (owner "")`)
	assert.Equal(t, int64(2), client.Exists(ctx, "medusa_lock:blank:2", "medusa_lock:anon").Val())
	assert.Zero(t, client.Exists(ctx, "medusa_lock:blank:1").Val())
	c.quit()

	recs := sink.all()
	require.Len(t, recs, 1, "only the release happened")
	assert.Equal(t, audit.ActionForceRelease, recs[0].Action)
	assert.Equal(t, "", recs[0].Owner)
	assert.Equal(t, 1, recs[0].Count)

	// The compare-and-delete the console relies on takes "" literally, not as "*".
	ops := operator.New(client, nil)
	how, err := ops.ForceReleaseOwner(ctx, "anon", "", operator.TellHolderFirst)
	require.NoError(t, err)
	assert.Equal(t, operator.NotReleased, how, `ForceReleaseOwner(key, "") never deletes a "*" lock`)
	how, err = ops.ForceReleaseOwner(ctx, "blank:2", "", operator.TellHolderFirst)
	require.NoError(t, err)
	assert.Equal(t, operator.Freed, how)
	assert.Equal(t, int64(1), client.Exists(ctx, "medusa_lock:anon").Val())
}

// commandNames counts the commands of calls by name, with the subcommand of CONFIG, CLIENT and
// INFO ("config get").
func commandNames(calls []redistest.Call) map[string]int {
	out := map[string]int{}
	for _, c := range calls {
		name := c.Name()
		if args := c.Cmd.Args(); len(args) > 1 && (name == "config" || name == "client" || name == "info") {
			name += " " + strings.ToLower(args[1].(string))
		}
		out[name]++
	}
	return out
}

func TestIntegrationReadOnlySendsOnlyReads(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	ctx := t.Context()
	require.NoError(t, client.Set(ctx, "medusa_lock:cart:1", "owner-a", time.Minute).Err())
	require.NoError(t, client.Set(ctx, "medusa_lock:cart:2", "owner-a", 0).Err())
	rec := &redistest.Recorder{Handshake: true}
	// The recorder is added first, so it sees every command the console tries, including any
	// the read-only hook would refuse.
	client.AddHook(rec)
	c := startConsole(t, Config{Client: client, URL: srv.URL, ReadOnly: true})
	c.await("cart:1", " RO ", "redis 7")
	c.press("d")
	c.press("y")
	c.press("D")
	c.press("y")
	c.await("read-only mode: releasing is disabled")
	c.press("?")
	c.await("Keys")
	c.press("x")
	c.quit()

	allowed := map[string]bool{"scan": true, "get": true, "pttl": true, "ping": true, "info server": true, "info memory": true,
		"config get": true, "dbsize": true, "hello": true, "client setinfo": true}
	names := commandNames(rec.Calls())
	require.NotEmpty(t, names)
	for name := range names {
		assert.True(t, allowed[name], "read-only console sent %q (all: %v)", name, names)
	}
	assert.Positive(t, names["scan"])
	assert.Equal(t, int64(2), client.Exists(ctx, "medusa_lock:cart:1", "medusa_lock:cart:2").Val())

	// Defence in depth: the client itself now refuses writes.
	err := client.Del(ctx, "medusa_lock:cart:1").Err()
	require.ErrorIs(t, err, redisconn.ErrReadOnly)
	_, err = operator.New(client, nil).ForceReleaseOwner(ctx, "cart:1", "owner-a", operator.TellHolderFirst)
	require.ErrorIs(t, err, redisconn.ErrReadOnly)
	assert.Equal(t, int64(2), client.Exists(ctx, "medusa_lock:cart:1", "medusa_lock:cart:2").Val())
}

func TestIntegrationStaleWhenServerStops(t *testing.T) {
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, DialTimeout: 500 * time.Millisecond,
		ReadTimeout: 500 * time.Millisecond, MaxRetries: -1})
	defer client.Close()
	require.NoError(t, client.Set(t.Context(), "medusa_lock:cart:1", "owner-a", time.Hour).Err())
	c := startConsole(t, Config{Client: client, URL: srv.URL, NoEvents: true})
	c.await("cart:1", "1 lock", "ping ")
	srv.Stop()
	c.await("STALE", "RECONNECTING", "Redis does not answer", "cart:1")
	c.quit()
}

func TestIntegrationKeyspaceNotificationsUpdateLive(t *testing.T) {
	srv := redistest.StartWith(t, redistest.Config{Args: []string{"--notify-keyspace-events", "KA"}})
	client := srv.Client(t)
	ctx := t.Context()
	require.NoError(t, client.Set(ctx, "medusa_lock:first", "o", time.Minute).Err())
	// The poll is an hour apart: only keyspace notifications can bring the new key.
	c := startConsole(t, Config{Client: client, URL: srv.URL, KeyspacePoll: time.Hour, Refresh: time.Hour, NoEvents: true})
	c.await("first", "keyspace events + rescan 1h")
	require.NoError(t, client.Set(ctx, "medusa_lock:second", "p", time.Minute).Err())
	c.await("second", "2 locks")
	require.NoError(t, client.Del(ctx, "medusa_lock:first").Err())
	c.await("GONE")
	c.quit()
}

func TestIntegrationEventsGiveContention(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	ctx := t.Context()
	require.NoError(t, client.Set(ctx, "medusa_lock:cart:9", "holder", time.Minute).Err())
	c := startConsole(t, Config{Client: client, URL: srv.URL})
	c.await("cart:9", "· events")
	c.press("3")
	ev, err := json.Marshal(events.Event{V: events.Version, Kind: provider.EventWaiting, Key: "cart:9",
		Owner: "waiter-1", TS: time.Now().UnixMilli(), Source: events.SourceGo})
	require.NoError(t, err)
	require.NoError(t, client.Publish(ctx, events.ChannelFor("medusa_lock:"), ev).Err())
	c.await("1 cart:9", "holder")
	c.quit()
}

// A server whose maxmemory-policy can evict held locks gets a badge beside the views.
func TestIntegrationShowsAnEvictingPolicy(t *testing.T) {
	srv := redistest.StartWith(t, redistest.Config{Args: []string{"--maxmemory-policy", "allkeys-lru"}})
	client := srv.Client(t)
	require.NoError(t, client.Set(t.Context(), "medusa_lock:cart:1", "owner-a", time.Minute).Err())
	c := startConsole(t, Config{Client: client, URL: srv.URL})
	c.await("cart:1", "EVICTS LOCKS: allkeys-lru")
}
