package tui

import (
	"fmt"
	"image/color"
	"regexp"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
	"github.com/locktui/locktui/tui/common"
	"github.com/locktui/locktui/tui/source"
	"github.com/locktui/locktui/tui/store"
)

// colourSGR matches a foreground or background colour in an escape sequence.
var colourSGR = regexp.MustCompile(`\x1b\[[0-9;]*(3[0-9]|4[0-9]|9[0-7]|10[0-7])(;[0-9;]*)?m`)

func TestNoColorRendersNoColour(t *testing.T) {
	m := newTestModel(t, Config{}) // the test models run with NoColor
	connected(m)
	feed(m, sampleStore())
	for _, k := range []string{"1", "2", "3", "4", "?"} {
		press(m, k)
		assert.False(t, colourSGR.MatchString(m.View().Content), "view %s has a colour", k)
		press(m, "esc")
	}
	for st, style := range m.common.Styles.States {
		_, none := style.GetForeground().(lipgloss.NoColor)
		assert.True(t, none, "state %v has a colour", st)
	}
}

func TestNoColorFromEnvironment(t *testing.T) {
	t.Setenv("NO_COLOR", "yes") // any non-empty value, per no-color.org
	cfg := Config{}.withDefaults()
	assert.True(t, cfg.NoColor)
}

func TestBackgroundPicksLightOrDarkPalette(t *testing.T) {
	m := newTestModel(t, Config{})
	m.cfg.NoColor = false
	m.Update(tea.BackgroundColorMsg{Color: color.White})
	light := m.common.Styles.State(store.StateNoTTL).GetForeground()
	m.Update(tea.BackgroundColorMsg{Color: color.Black})
	dark := m.common.Styles.State(store.StateNoTTL).GetForeground()
	require.NotNil(t, light)
	assert.NotEqual(t, light, dark, "light and dark terminals get different colours")
}

func TestSamplingStatesItsCost(t *testing.T) {
	m := newTestModel(t, Config{})
	connected(m)
	feed(m, sampleStore())
	press(m, "p")
	require.NotNil(t, m.sampler)
	assert.NotZero(t, m.sampleRun, "the watcher runs it")
	assert.Equal(t, "stuck:job", m.sampler.Keys()[0], "the selected key first")
	assert.Len(t, m.sampler.Keys(), 4, "the keys on screen")
	out := screen(m)
	perSec := 4*operator.ReadsPerKey*4 + 1 // 4 keys × ReadsPerKey commands × 4/s + INFO
	assert.Contains(t, out, fmt.Sprintf("sampling 30s: +%d cmds/s", perSec), "4 keys × ReadsPerKey commands × 4/s + INFO")
	status(m, func(st *source.Status) {
		st.Sample = source.SampleRun{ID: m.sampleRun, Stats: source.SampleStats{Left: 12 * time.Second, ScriptCallsPerSec: 40}}
	})
	assert.Contains(t, screen(m), fmt.Sprintf("sampling 12s: +%d cmds/s, 40 script calls/s", perSec), "the watcher's last step")
	press(m, "p")
	assert.Nil(t, m.sampler)
	assert.Contains(t, screen(m), "sampling stopped")

	press(m, "p")
	run := m.sampleRun
	status(m, func(st *source.Status) { st.Sample, st.SampleDone = source.SampleRun{}, run },
		source.Update{Notice: "sampling done: hand-offs seen are in the hot view (3)"})
	assert.Nil(t, m.sampler, "the run ended by itself")
	assert.NotContains(t, screen(m), "cmds/s")
}

func TestEnterOnDetailAndBack(t *testing.T) {
	m := newTestModel(t, Config{})
	connected(m)
	feed(m, sampleStore())
	press(m, "4")
	assert.Equal(t, pageDetail, m.active)
	assert.Equal(t, "stuck:job", m.query.Detail, "4 shows the selected lock")
	feed(m, sampleStore())
	out := screen(m)
	assert.Contains(t, out, "never expires")
	assert.Contains(t, out, "NO TTL")
	press(m, "esc")
	assert.Equal(t, pageLocks, m.active)
}

func TestKeysBeforeTheFirstView(t *testing.T) {
	m := newTestModel(t, Config{})
	for _, k := range []string{"c", "C", "p", ":", "x", "enter", "d", "D", "enter", "s", "4", "3", "c", "2", "enter", "/", "x", "enter", "?"} {
		press(m, k) // nothing to act on yet: no key may crash
	}
	assert.Contains(t, screen(m), "Keys")
}

func TestDetailShowsAShortLeaseUnrounded(t *testing.T) {
	m := newTestModel(t, Config{})
	connected(m)
	s := store.New()
	s.Observe([]operator.Lock{{Key: "k", Owner: "o", TTL: 1000 * time.Millisecond}}, clock.Add(-40*time.Millisecond), 1)
	feed(m, s)
	press(m, "enter")
	feed(m, s)
	assert.Contains(t, screen(m), "0.9s of a 1.0s lease", "not \"1.0s of a 0s lease\": the countdown is cut down, the lease kept")
}

// TestSeenIsNotPassedOffAsHeld: without holder record, how long the console has seen a lock is
// only a lower bound of its hold, and the HELD column says so.
func TestSeenIsNotPassedOffAsHeld(t *testing.T) {
	m := newTestModel(t, Config{})
	connected(m)
	feed(m, sampleStore())
	out := screen(m)
	assert.Regexp(t, `\bHELD\s+WAIT`, out)
	assert.Regexp(t, `no record .* ≥10s `, out)
	assert.NotRegexp(t, `\d\.\ds +10s `, out, "a TTL followed by a bare seen time")
	assert.NotContains(t, out, "HELD FOR")
}

func TestCursorStaysOnTheTopRowWhileLoading(t *testing.T) {
	m := newTestModel(t, Config{})
	status(m, func(st *source.Status) { st.Conn.InfoOK = true }) // no refresh done yet
	s := store.New()
	s.Observe([]operator.Lock{{Key: "b-held", Owner: "o", TTL: time.Minute}}, clock, 1)
	feed(m, s)
	s.Observe([]operator.Lock{{Key: "a-stuck", Owner: "o", TTL: provider.NoExpiry}}, clock, 1)
	feed(m, s)
	e, ok := m.locks.Selected()
	require.True(t, ok)
	assert.Equal(t, "a-stuck", e.Key, "the NO TTL suspect sorted to the top is under the cursor")

	status(m, func(st *source.Status) { refreshed(st, source.ScanStats{Took: time.Millisecond}) })
	press(m, "down")
	s.Observe([]operator.Lock{{Key: "0-stuck", Owner: "o", TTL: provider.NoExpiry}}, clock, 2)
	feed(m, s)
	e, _ = m.locks.Selected()
	assert.Equal(t, "b-held", e.Key, "once loaded, the cursor follows the chosen key")
}

func TestKeysAreShortenedInTheMiddle(t *testing.T) {
	assert.Equal(t, "cart…G1GH", common.Middle("cart:cart_01JK4KH3QZ8W5N2M7XG1GH", 9), "the end, where cart ids differ, stays")
	assert.Equal(t, "short    ", common.FitMiddle("short", 9))
	assert.Equal(t, "abc…wxyz", common.FitMiddle("abcdefghijklmnopqrstuvwxyz", 8))
}

func TestSelectedLineShowsTheWholeKeyBeforeTheOwner(t *testing.T) {
	m := newTestModel(t, Config{})
	connected(m)
	key := "inventory:iitem_01JK4KH3QZ8W5N2M7XG1ABCDEFGHJK" // 46 cells
	s := store.New()
	s.Observe([]operator.Lock{{Key: key, Owner: "worker:inventory-sync-681490-0001", TTL: provider.NoExpiry}}, clock, 1)
	feed(m, s)
	out := screen(m)
	assert.Contains(t, out, "key "+key+"  owner worker:", "the key whole, the owner shortened in its middle")
	assert.Contains(t, out, "-0001")
}

func TestDetailSaysALockWithoutRecordHasNone(t *testing.T) {
	m := newTestModel(t, Config{})
	connected(m)
	s := store.New()
	s.Observe([]operator.Lock{{Key: "stock:1", Owner: "svc", TTL: time.Minute}}, clock.Add(-time.Minute), 1)
	feed(m, s)
	press(m, "enter")
	feed(m, s)
	out := screen(m)
	assert.Contains(t, out, "HOLDER     unknown: "+store.NoRecordWhy)
	assert.NotContains(t, out, "HELD FOR", "no true hold to show")
	assert.Contains(t, out, "SEEN FOR   1m00s")
}

// A GONE lock has no TTL left: the detail says it went and when, not "0.0s of a lease".
func TestDetailOfAGoneLockShowsNoCountdown(t *testing.T) {
	m := newTestModel(t, Config{})
	connected(m)
	s := store.New()
	s.Observe([]operator.Lock{{Key: "cart:9", Owner: "o", TTL: time.Minute}}, clock.Add(-time.Minute), 1)
	s.Absent([]string{"cart:9"}, clock.Add(-3*time.Second))
	feed(m, s)
	press(m, "enter")
	feed(m, s)
	out := screen(m)
	assert.Contains(t, out, "TTL        - (gone 3s ago: released or expired)")
	assert.NotContains(t, out, "0.0s of a")
}

// A key of another type has no owner: its detail does not list the empty owner `""` among the
// owners seen, nor say the console saw "this owner hold it".
func TestDetailOfAForeignKeyShowsNoEmptyOwner(t *testing.T) {
	m := newTestModel(t, Config{})
	connected(m)
	s := store.New()
	s.Observe([]operator.Lock{{Key: "cart:1", Owner: "svc", TTL: time.Minute}}, clock.Add(-time.Minute), 1)
	s.Observe([]operator.Lock{{Key: "cart:1", Foreign: true, TTL: provider.NoExpiry}}, clock.Add(-30*time.Second), 2)
	feed(m, s)
	press(m, "enter")
	feed(m, s)
	out := screen(m)
	assert.Contains(t, out, "OWNER      none: a key of another type, not a lock")
	assert.NotContains(t, out, `""`, "a foreign key is not held by the empty owner")
	assert.NotContains(t, out, "this owner hold it")
	assert.Contains(t, out, "SEEN FOR   30s")
	assert.Regexp(t, `now +\(not a lock\)`, out)
	assert.Regexp(t, `30s +svc`, out, "the lock it was before keeps its owner")
}

// When the selected lock goes (released with d, or expired), the cursor stays where it was, on
// the lock that takes its place, as k9s does after a delete: it does not follow the GONE row
// to the end of the table, where the operator would lose the NO TTL suspects at the top.
func TestCursorStaysInPlaceWhenTheSelectedLockGoes(t *testing.T) {
	m := newTestModel(t, Config{})
	connected(m)
	s := store.New()
	var locks []operator.Lock
	for i := range 40 {
		ttl := time.Duration(i+1) * time.Minute
		if i < 3 {
			ttl = provider.NoExpiry
		}
		locks = append(locks, operator.Lock{Key: fmt.Sprintf("k%02d", i), Owner: "o", TTL: ttl})
	}
	s.Observe(locks, clock.Add(-time.Minute), 1)
	feed(m, s)
	press(m, "j")
	feed(m, s)
	e, ok := m.locks.Selected()
	require.True(t, ok)
	gone := e.Key

	s.Absent([]string{gone}, clock.Add(-time.Second))
	v := feed(m, s)
	require.Equal(t, gone, v.Locks[len(v.Locks)-1].Key, "the GONE row is listed last")
	e, ok = m.locks.Selected()
	require.True(t, ok)
	assert.NotEqual(t, gone, e.Key, "the cursor left the GONE row")
	assert.Equal(t, store.StateNoTTL, e.State(clock), "it stays among the NO TTL suspects")

	// The last live row going leaves the cursor on the live row above it.
	press(m, "G")
	feed(m, s)
	e, _ = m.locks.Selected()
	require.Equal(t, store.StateGone, e.State(clock), "G goes to the GONE row at the end")
	press(m, "k")
	feed(m, s)
	last, _ := m.locks.Selected()
	s.Absent([]string{last.Key}, clock.Add(-time.Second))
	feed(m, s)
	e, _ = m.locks.Selected()
	assert.NotEqual(t, store.StateGone, e.State(clock), "the cursor is on a live lock")
}
