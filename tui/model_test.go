package tui

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/audit"
	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
	"github.com/locktui/locktui/tui/source"
	"github.com/locktui/locktui/tui/store"
)

func TestScreenFits80x24(t *testing.T) {
	m := newTestModel(t, Config{})
	connected(m)
	feed(m, sampleStore())
	for _, p := range []string{"1", "2", "3", "4", "?"} {
		press(m, p)
		out := screen(m)
		ls := lines(out)
		require.Len(t, ls, 24, "view %s: the screen is exactly 24 lines", p)
		for i, l := range ls {
			assert.LessOrEqual(t, ansi.StringWidth(l), 80, "view %s line %d is too wide: %q", p, i, l)
		}
		press(m, "esc")
	}
}

func TestStatusBarSaysWhereAndHow(t *testing.T) {
	m := newTestModel(t, Config{Namespace: "medusa_lock:"})
	out := screen(m)
	assert.Contains(t, out, "loading…", "before the first refresh")
	connected(m)
	feed(m, sampleStore())
	out = screen(m)
	for _, want := range []string{"redis://:xxxxx@localhost:6390/0", "db0", "ns medusa_lock:", "redis 7.0.15",
		"ping 0.42ms", "4 locks", "poll 1s"} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, "secret", "the password is never shown")
	assert.NotContains(t, out, "STALE")
	assert.NotContains(t, out, " RO ")
}

func TestStatusBarNeverShowsAPassword(t *testing.T) {
	for _, url := range []string{
		"redis://:hunter2@localhost:notaport",                 // does not parse
		"redis://s1:26379/0?master_name=m&password=hunter2",   // Sentinel: the master's password
		"user:hunter2@localhost:6390",                         // no "//": the user part is opaque
		"redis://n1:7000?cluster=true&addr=u:hunter2@n2:7001", // a user in another address
	} {
		m := newTestModel(t, Config{URL: url})
		connected(m)
		feed(m, sampleStore())
		out := screen(m)
		assert.NotContains(t, out, "hunter2", "status bar of %s", url)
		assert.Contains(t, out, "xxxxx", "status bar of %s", url)
	}
}

func TestStatesAreWords(t *testing.T) {
	m := newTestModel(t, Config{})
	connected(m)
	feed(m, sampleStore())
	out := screen(m)
	for _, want := range []string{"NO TTL", "EXPIRING", "RENEWED", "HELD", "no expiry", "3.0s"} {
		assert.Contains(t, out, want)
	}
	assert.Regexp(t, `cart:1 .* 1 +0\.1/s`, out, "one waiter, 0.1 contended/s, in their own columns")
	// Attention order: NO TTL first, then EXPIRING.
	assert.Less(t, strings.Index(out, "NO TTL"), strings.Index(out, "EXPIRING"))
}

func TestCountdownTicksOnlyWhileCounting(t *testing.T) {
	m := newTestModel(t, Config{})
	s := store.New()
	s.Observe([]operator.Lock{{Key: "forever", Owner: "*", TTL: provider.NoExpiry}}, clock, 1)
	_, cmd := m.Update(viewMsg{view: s.Build(m.query, clock)})
	assert.False(t, m.ticking, "nothing counts down: no ticks")

	s.Observe([]operator.Lock{{Key: "soon", Owner: "o", TTL: 10 * time.Second}}, clock, 1)
	_, cmd = m.Update(viewMsg{view: s.Build(m.query, clock)})
	assert.True(t, m.ticking)
	require.NotNil(t, cmd)
	before := screen(m)
	m.common.Now = func() time.Time { return clock.Add(1500 * time.Millisecond) }
	m.Update(tickMsg{})
	assert.Contains(t, before, "10.0s")
	assert.Contains(t, screen(m), "8.5s", "the TTL counts down between refreshes")
}

func TestHelpListsKeys(t *testing.T) {
	m := newTestModel(t, Config{})
	press(m, "?")
	out := screen(m)
	for _, want := range []string{"filter", "sort column", "reverse sort", "detail", "1-4", "esc",
		"force-release", "release owner", "sample (paid)", "copy key", "view by name", "quit", "cost:", "owner:"} {
		assert.Contains(t, out, want)
	}
	press(m, "x")
	assert.NotContains(t, screen(m), "Notes", "any key closes the help")
}

func TestReadOnlyHidesMutations(t *testing.T) {
	m := newTestModel(t, Config{ReadOnly: true})
	connected(m)
	feed(m, sampleStore())
	out := screen(m)
	assert.Contains(t, out, " RO ")
	press(m, "?")
	out = screen(m)
	assert.NotContains(t, out, "force-release")
	assert.NotContains(t, out, "release all")
	press(m, "esc")
	for _, k := range []string{"d", "D"} {
		cmd := press(m, k)
		assert.Nil(t, cmd, "%s does nothing in read-only mode", k)
		assert.False(t, m.dialog.Active())
		assert.Contains(t, screen(m), "read-only mode: releasing is disabled")
		assert.Nil(t, press(m, "y"))
	}
	// Even a dialog opened some other way cannot release.
	m.dialog.Open("x", nil, releaseReq{seen: operator.Lock{Key: "cart:1", Owner: "o"}})
	assert.Nil(t, press(m, "y"))
}

func TestForceReleaseDialog(t *testing.T) {
	m := newTestModel(t, Config{})
	connected(m)
	feed(m, sampleStore())
	// The first row is the NO TTL lock.
	press(m, "d")
	require.True(t, m.dialog.Active())
	out := screen(m)
	assert.Contains(t, out, "Force-release this lock?")
	assert.Contains(t, out, "stuck:job")
	assert.Contains(t, out, `owner  "*"`)
	assert.Contains(t, out, "holder no holder record", "the dialog names the process it cuts off, or that it cannot")
	assert.Contains(t, out, "compare-and-delete")
	assert.Contains(t, out, "Not audited")

	assert.Nil(t, press(m, "n"), "anything but y cancels")
	assert.False(t, m.dialog.Active())
	assert.Contains(t, screen(m), "cancelled")

	press(m, "d")
	assert.NotNil(t, press(m, "y"), "y runs the release")
	assert.Contains(t, screen(m), "releasing stuck:job")
}

func TestReleaseResults(t *testing.T) {
	m := newTestModel(t, Config{})
	cases := []struct {
		msg  releaseDoneMsg
		want string
	}{
		{releaseDoneMsg{key: "k", owner: "a", released: true}, `released k (owner "a")`},
		{releaseDoneMsg{key: "k", owner: "a", nowHeld: true, nowOwner: "b"}, `not released: owner of k changed to "b"`},
		{releaseDoneMsg{key: "k", owner: "a", nowHeld: true}, `not released: owner of k changed to ""`},
		{releaseDoneMsg{key: "k", owner: "a", nowHeld: true, nowOwner: "a"}, `not released: k changed since the dialog (owner "a"): press d again`},
		{releaseDoneMsg{key: "k", owner: "a"}, "not released: k is already gone"},
		{releaseDoneMsg{key: "k", owner: "a", released: true, auditErr: errors.New("disk full")}, "AUDIT FAILED for k: disk full"},
	}
	for _, c := range cases {
		m.Update(c.msg)
		assert.Contains(t, screen(m), c.want)
	}
	m.Update(releaseAllDoneMsg{owner: "svc", count: 3})
	assert.Contains(t, screen(m), `released 3 locks of "svc"`)
}

func TestReleaseAllDialogCountsTheOwnersLocks(t *testing.T) {
	m := newTestModel(t, Config{Audit: &memorySink{}})
	connected(m)
	feed(m, sampleStore())
	press(m, "2") // owners, most keys first
	press(m, "D")
	require.True(t, m.dialog.Active())
	out := screen(m)
	assert.Contains(t, out, "Release all 2 locks of this owner?")
	assert.Contains(t, out, `owner  "execute:0b5a3c1e`)
	assert.Contains(t, out, "Audited as tester@host to test-audit.jsonl.", "the dialog names where the record goes")
	assert.NotNil(t, press(m, "y"))
}

// D's walk of the namespace is charged to the console's budget, as a refresh is, instead of
// going as fast as Redis answers.
func TestReleaseAllIsPacedByTheBudget(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	for _, k := range []string{"a", "b"} {
		require.NoError(t, client.Set(t.Context(), "medusa_lock:"+k, "svc", time.Minute).Err())
	}
	sink := &memorySink{}
	m := newTestModel(t, Config{Client: client, Audit: sink})
	cmd := m.releaseAll(releaseAllReq{owner: "svc", count: 2})
	assert.Contains(t, screen(m), `releasing the locks of "svc"…`)
	msg := cmd()
	done, ok := msg.(releaseAllDoneMsg)
	require.True(t, ok, "%T", msg)
	assert.Equal(t, releaseAllDoneMsg{owner: "svc", count: 2, bulk: m.bulk}, done)
	m.Update(tickMsg{})
	assert.Contains(t, screen(m), `releasing the locks of "svc"… 2 locks released so far`, "the count so far shows while it runs")
	m.Update(done)
	assert.Contains(t, screen(m), `released 2 locks of "svc"`)
	assert.Nil(t, m.bulk)
	assert.GreaterOrEqual(t, m.src.Charged(), int64(operator.ScanCount+2*operator.ReadsPerKey+2),
		"the SCAN, the reads and the deletes are charged")

	// Its record names each lock released and the holder cut off (here stock's: none).
	recs := sink.all()
	require.Len(t, recs, 1)
	locks := recs[0].Locks
	slices.SortFunc(locks, func(a, b audit.LockReleased) int { return strings.Compare(a.Key, b.Key) })
	assert.Equal(t, []audit.LockReleased{{Key: "a", Owner: "svc", Holder: operator.NoHolderRecord},
		{Key: "b", Owner: "svc", Holder: operator.NoHolderRecord}}, locks)
}

// The progress of a D under way does not hide another notice: a sticky one (a failed audit
// write of a d meanwhile) stays; a passing one is replaced once it expired.
func TestBulkProgressLeavesOtherNotices(t *testing.T) {
	m := newTestModel(t, Config{})
	m.bulk = &bulkRelease{owner: "svc"}
	m.bulk.released.Store(3)
	m.setStickyNotice("AUDIT FAILED for k: disk full")
	m.Update(tickMsg{})
	assert.Contains(t, screen(m), "AUDIT FAILED for k: disk full")
	m.setNotice("copied", false)
	m.notice.until = m.common.Now().Add(-time.Second)
	m.Update(tickMsg{})
	assert.Contains(t, screen(m), `releasing the locks of "svc"… 3 locks released so far`)
}

// Of two D's at once, the later one's count shows.
func TestBulkProgressOfASecondRelease(t *testing.T) {
	m := newTestModel(t, Config{})
	_ = m.releaseAll(releaseAllReq{owner: "a", count: 5})
	first := m.bulk
	first.released.Store(3)
	m.Update(tickMsg{})
	_ = m.releaseAll(releaseAllReq{owner: "b", count: 5})
	m.bulk.released.Store(4)
	first.released.Store(5)
	m.Update(tickMsg{})
	assert.Contains(t, screen(m), `releasing the locks of "b"… 4 locks released so far`)
}

func TestFilterSortAndViews(t *testing.T) {
	m := newTestModel(t, Config{})
	connected(m)
	s := sampleStore()
	feed(m, s)

	press(m, "/", "c", "a", "r", "t")
	assert.Equal(t, "cart", m.query.Filter, "typing filters at once")
	assert.Contains(t, screen(m), "/cart")
	press(m, "enter")
	feed(m, s)
	out := screen(m)
	assert.Contains(t, out, "cart:1")
	assert.NotContains(t, out, "order:7")
	assert.Contains(t, out, "4 locks", "the status bar counts every lock")

	press(m, "esc")
	assert.Equal(t, "", m.query.Filter, "esc clears the filter")

	press(m, "s")
	assert.Equal(t, store.Sort{Column: store.LockByKey}, m.query.LockSort)
	press(m, "S")
	assert.Equal(t, store.Sort{Column: store.LockByKey, Reverse: true}, m.query.LockSort)
	feed(m, s)
	assert.Contains(t, screen(m), "KEY↑")

	press(m, "tab")
	assert.Equal(t, pageOwners, m.active)
	press(m, "enter") // drill down into the first owner's locks
	assert.Equal(t, pageLocks, m.active)
	assert.Equal(t, "owner:=execute:0b5a3c1e-0000-4000-8000-000000000001", m.query.Filter)

	press(m, "3")
	assert.Equal(t, pageHot, m.active)
	feed(m, s)
	assert.Contains(t, screen(m), "cart:1")
	press(m, "enter")
	assert.Equal(t, pageDetail, m.active)
	assert.Equal(t, "cart:1", m.query.Detail)
	feed(m, s)
	out = screen(m)
	assert.Contains(t, out, "Owners seen")
	assert.Contains(t, out, "1 waiting")
	press(m, "esc")
	assert.Equal(t, pageHot, m.active, "esc goes back")
}

func TestStaleWhenRedisGoesAway(t *testing.T) {
	m := newTestModel(t, Config{})
	connected(m)
	feed(m, sampleStore())
	status(m, func(st *source.Status) {
		st.LastGood = clock.Add(-12 * time.Second)
		st.Conn.Down, st.Conn.InfoOK, st.Conn.RetryAt = true, false, clock.Add(500*time.Millisecond)
	}, source.Update{Notice: "Redis does not answer: dial tcp 127.0.0.1:6390: connect: connection refused", Err: true, Sticky: true})
	out := screen(m)
	assert.Contains(t, out, "STALE 12s")
	assert.Contains(t, out, "RECONNECTING in 0.5s")
	assert.Contains(t, out, "connection refused")
	assert.Contains(t, out, "cart:1", "the last data stays on screen")

	status(m, func(st *source.Status) { st.Conn.Down, st.Conn.InfoOK, st.Scanning = false, true, true },
		source.Update{Notice: "Redis answers again: refreshing"})
	out = screen(m)
	assert.NotContains(t, out, "RECONNECTING", "Redis answers")
	assert.Contains(t, out, "STALE", "until the refresh is done")
	status(m, func(st *source.Status) { refreshed(st, source.ScanStats{Took: time.Millisecond}) })
	assert.NotContains(t, screen(m), "STALE")
}

func TestTooSmall(t *testing.T) {
	m := newTestModel(t, Config{})
	m.Update(tea.WindowSizeMsg{Width: 30, Height: 8})
	assert.Contains(t, screen(m), "terminal too small")
}

func TestQuit(t *testing.T) {
	m := newTestModel(t, Config{})
	for _, k := range []string{"q", "ctrl+c"} {
		cmd := press(m, k)
		require.NotNil(t, cmd)
		assert.Equal(t, tea.QuitMsg{}, cmd(), "%s quits", k)
	}
}

func TestRendersOnlyVisibleRows(t *testing.T) {
	m := newTestModel(t, Config{})
	s := store.New()
	locks := make([]operator.Lock, 20000)
	for i := range locks {
		locks[i] = operator.Lock{Key: fmt.Sprintf("k:%06d", i), Owner: "o", TTL: time.Minute}
	}
	s.Observe(locks, clock, 1)
	connected(m)
	press(m, "s") // by key
	feed(m, s)
	out := screen(m)
	assert.Len(t, lines(out), 24)
	assert.Contains(t, out, "k:000000")
	assert.Contains(t, out, "20,000 locks")
	press(m, "G")
	assert.Contains(t, screen(m), "k:019999")
}

// The empty owner is an owner like any other for d (compare-and-delete against ""), but D
// refuses it: ReleaseAllWith reads "" as "no owner given" and would release the
// anonymous "*" locks instead. Dialogs quote owners so blank ones are visible.
func TestEmptyOwnerIsQuotedAndNotReleasedInBulk(t *testing.T) {
	m := newTestModel(t, Config{})
	connected(m)
	s := store.New()
	s.Observe([]operator.Lock{
		{Key: "blank:1", Owner: "", TTL: provider.NoExpiry},
		{Key: "blank:2", Owner: "", TTL: provider.NoExpiry},
		{Key: "anon", Owner: "*", TTL: time.Minute},
		{Key: "space", Owner: " ", TTL: time.Minute},
	}, clock, 1)
	feed(m, s)

	press(m, "2") // owners, most keys first: ""
	o, ok := m.owners.Selected()
	require.True(t, ok)
	require.Equal(t, "", o.Owner)
	assert.Nil(t, press(m, "D"))
	assert.False(t, m.dialog.Active(), "no dialog for the empty owner")
	assert.Contains(t, screen(m), `the empty owner "" cannot be released in bulk`)
	// Even a dialog opened some other way does not release "" in bulk.
	m.dialog.Open("x", nil, releaseAllReq{owner: ""})
	assert.Nil(t, press(m, "y"))

	for i := 0; i < 3 && o.Owner != " "; i++ {
		press(m, "down")
		o, _ = m.owners.Selected()
	}
	require.Equal(t, " ", o.Owner)
	press(m, "D")
	require.True(t, m.dialog.Active())
	assert.Contains(t, screen(m), `owner  " "`, "a blank owner is visible")
	press(m, "n")

	press(m, "1") // locks: the NO TTL ones first, owned by ""
	e, ok := m.locks.Selected()
	require.True(t, ok)
	require.Equal(t, "", e.Owner)
	press(m, "d")
	require.True(t, m.dialog.Active(), "d releases a key of the empty owner")
	assert.Contains(t, screen(m), `owner  ""`)
	assert.NotNil(t, press(m, "y"))
}

// The status bar says whether lock events are subscribed (the watcher retries a failed
// subscription: TestIntegrationEventsResubscribeAfterAFailedStart).
func TestStatusBarSaysWhetherLockEventsAreSubscribed(t *testing.T) {
	m := newTestModel(t, Config{})
	connected(m)
	status(m, func(st *source.Status) { st.Events = source.Feed{Err: errors.New("NOPERM")} },
		source.Update{Notice: "lock events unavailable (no contention from events), retrying: NOPERM", Err: true})
	assert.Contains(t, screen(m), "lock events unavailable")
	assert.Contains(t, screen(m), "no events")
	status(m, func(st *source.Status) { st.Events = source.Feed{On: true} }, source.Update{Notice: "lock events subscribed"})
	assert.Contains(t, screen(m), "lock events subscribed")
	assert.NotContains(t, screen(m), "no events")
}

// The help states the cost of a refresh as the budget counts it: SCAN walks the whole
// database, so a database with many other keys costs many SCANs, whatever the locks.
func TestHelpStatesTheCostOfARefresh(t *testing.T) {
	m := newTestModel(t, Config{})
	connected(m)
	feed(m, sampleStore())
	status(m, func(st *source.Status) {
		refreshed(st, source.ScanStats{Took: 25 * time.Second, Scans: 5000, Commands: 5012, Cost: 500012})
	})
	press(m, "?")
	out := screen(m)
	assert.Contains(t, out, fmt.Sprintf("SCAN walks the whole db: 100 per SCAN + %d per lock, ≤ 20,000/s", operator.ReadsPerKey))
	assert.Contains(t, out, "last refresh: 5,000 SCAN (~500,000 keys) + 12 reads = 500,012 ≥ 25.0s")
	press(m, "esc")
	assert.Contains(t, screen(m), "poll 25s (budget 20,000/s)", "the status bar says the budget stretched the poll")
}

func TestExactFilterReadsTheKeyAtOnce(t *testing.T) {
	m := newTestModel(t, Config{})
	status(m, func(st *source.Status) {
		st.Conn = source.Conn{Latency: time.Millisecond, Info: source.ServerInfo{Keys: 1_100_000}, InfoOK: true}
		st.Scanning = true // the first refresh has a million keys to walk
	})
	feed(m, store.New())
	press(m, "/", "=")
	var cmd tea.Cmd
	for _, k := range "k-stuck" {
		cmd = press(m, string(k))
	}
	require.NotNil(t, cmd, "an exact key is read at once")
	assert.Equal(t, "k-stuck", m.lookup.key, "as typed: Redis keys are case-sensitive")
	feed(m, store.New())
	assert.Contains(t, screen(m), "reading k-stuck…")

	m.Update(lookupMsg{gen: m.lookup.gen - 1, found: true})
	assert.False(t, m.lookup.done, "the read of a filter typed over since is dropped")
	m.Update(lookupMsg{gen: m.lookup.gen})
	out := screen(m)
	assert.Contains(t, out, "k-stuck is not locked: no key medusa_lock:k-stuck (read just now)")
	assert.NotContains(t, out, "no locks match")

	press(m, "backspace") // "=k-stuc": still exact, another read
	assert.Equal(t, "k-stuc", m.lookup.key)
	press(m, "esc")
	assert.Empty(t, m.lookup.key, "no filter, no lookup")
}

func TestWhileTheFirstScanRunsTheTableSaysHowFarItIs(t *testing.T) {
	m := newTestModel(t, Config{})
	status(m, func(st *source.Status) {
		st.Conn = source.Conn{Latency: time.Millisecond, Info: source.ServerInfo{Keys: 1_100_000}, InfoOK: true}
		st.Scanning = true
	})
	press(m, "/", "c", "a", "r", "t", "enter")
	feed(m, store.New())
	out := screen(m)
	assert.Contains(t, out, "no match yet: scanned ~0 of 1,100,000 keys (0%), 0 locks so far")
	assert.NotContains(t, out, "no locks match")

	status(m, func(st *source.Status) { refreshed(st, source.ScanStats{Took: time.Millisecond}) })
	feed(m, store.New())
	assert.Contains(t, screen(m), "no locks match /cart (whole namespace read 0s ago)")
}

func TestCopyPutsTheSelectedKeyOrOwnerOnTheClipboard(t *testing.T) {
	m := newTestModel(t, Config{})
	connected(m)
	feed(m, sampleStore())
	cmd := press(m, "c")
	require.NotNil(t, cmd)
	assert.Equal(t, tea.SetClipboard("stuck:job")(), cmd(), "c copies the selected key (OSC 52)")
	assert.Contains(t, screen(m), "copied key stuck:job to the clipboard")
	cmd = press(m, "C")
	require.NotNil(t, cmd)
	assert.Equal(t, tea.SetClipboard("*")(), cmd(), "C copies its owner")
	assert.Nil(t, m.sampler, "c no longer starts paid sampling")
}

func TestColonSwitchesViewsByName(t *testing.T) {
	m := newTestModel(t, Config{})
	connected(m)
	feed(m, sampleStore())
	for _, c := range []struct {
		typed string
		want  page
	}{{"owners", pageOwners}, {"hot", pageHot}, {"lo", pageLocks}, {"o", pageOwners}, {"locks", pageLocks}} {
		press(m, ":")
		assert.Contains(t, screen(m), ":")
		for _, r := range c.typed {
			press(m, string(r))
		}
		press(m, "enter")
		assert.Equal(t, c.want, m.active, ":%s", c.typed)
	}
	press(m, ":", "x", "y", "enter")
	assert.Contains(t, screen(m), `unknown view "xy"`)
	press(m, ":", "h", "e", "l", "p", "enter")
	assert.True(t, m.showHelp)
	press(m, "esc")
	press(m, ":", "q", "esc")
	assert.False(t, m.commanding, "esc drops the command")
	press(m, ":", "q")
	cmd := press(m, "enter")
	require.NotNil(t, cmd)
	assert.Equal(t, tea.Quit(), cmd(), ":q quits")
}

func TestOwnersThatDoNotPrintAreQuotedEverywhere(t *testing.T) {
	m := newTestModel(t, Config{})
	connected(m)
	s := store.New()
	s.Observe([]operator.Lock{{Key: "a", Owner: "", TTL: provider.NoExpiry}, {Key: "b", Owner: "x\x1b[2J", TTL: time.Minute}}, clock, 1)
	feed(m, s)
	for _, view := range []string{"1", "2"} {
		press(m, view)
		if view == "1" {
			press(m, "down") // the table's OWNER column is too narrow: the selected line has it whole
		}
		out := m.View().Content
		assert.NotContains(t, out, "\x1b[2J", "view %s: the escape is not sent to the terminal", view)
		assert.Contains(t, screen(m), `"x\x1b[2J"`, "view %s", view)
		assert.Contains(t, screen(m), `""`, "view %s: the empty owner", view)
	}
}
