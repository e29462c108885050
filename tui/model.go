package tui

import (
	"context"
	"errors"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/locktui/locktui/tui/common"
	"github.com/locktui/locktui/tui/components/dialog"
	"github.com/locktui/locktui/tui/components/input"
	"github.com/locktui/locktui/tui/pages/detail"
	"github.com/locktui/locktui/tui/pages/hot"
	"github.com/locktui/locktui/tui/pages/locks"
	"github.com/locktui/locktui/tui/pages/owners"
	"github.com/locktui/locktui/tui/source"
	"github.com/locktui/locktui/tui/store"
)

// tickEvery is the countdown frame interval (5 fps), used only while something counts down.
const tickEvery = 200 * time.Millisecond

// noticeFor is how long a notice stays in the footer.
const noticeFor = 8 * time.Second

// page identifies a view.
type page int

const (
	pageLocks page = iota
	pageOwners
	pageHot
	pageDetail
	pageCount
)

var pageNames = [pageCount]string{"Locks", "Owners", "Hot", "Detail"}

// notice is a line in the footer: a result, an error, a failed audit write.
type notice struct {
	text  string
	err   bool
	until time.Time // zero: until the next notice
}

// conn is what the console knows about the connection.
type conn struct {
	info    source.ServerInfo
	infoOK  bool // INFO/CONFIG read on this connection
	latency time.Duration
	down    bool
	err     error
	// retry paces the heartbeats while Redis does not answer.
	retry source.Backoff
}

// model is the root model: it routes keys, owns the pages, the dialog and the filter, and
// schedules every Redis call as a tea.Cmd.
type model struct {
	cfg    Config
	rt     *runtime
	src    *source.Source
	hub    *source.Hub
	common *common.Common

	pages    [pageCount]common.Component
	locks    *locks.Page
	owners   *owners.Page
	hot      *hot.Page
	detail   *detail.Page
	active   page
	previous page

	dialog  *dialog.Model
	filter  *input.Model
	editing bool
	// command is the ":" prompt (k9s' view switch), shown while commanding.
	command    *input.Model
	commanding bool
	showHelp   bool

	query   store.Query
	view    *store.View
	conn    conn
	notice  notice
	ticking bool

	// refreshing
	scanning bool
	scanGen  int
	// scanAgain asks for a refresh as soon as the one under way ends: the keyspace
	// subscription came up while it ran, so changes it walked past before then may be missed.
	scanAgain bool
	// scanHeld is set while the refresh due is held for the keyspace subscription being made,
	// so changes between the two are not missed and no second refresh is needed.
	scanHeld bool
	lastScan source.ScanStats
	loaded   bool
	lastGood time.Time
	// keyspace is the subscription to keyspace notifications (ks once made), events the one
	// to lock events.
	keyspace subscription
	ks       *source.Keyspace
	events   subscription

	// lookup is the exact-key read of the current filter.
	lookup lookup

	// sampling
	sampler     *source.Sampler
	sampleGen   int
	sampleStats source.SampleStats
}

// newModel builds the root model; it does no I/O.
func newModel(cfg Config, rt *runtime) *model {
	c := common.New(cfg.ReadOnly, cfg.NoColor)
	m := &model{
		cfg:    cfg,
		rt:     rt,
		src:    source.New(source.Options{Client: cfg.Client, Namespace: cfg.Namespace, Budget: cfg.Budget}),
		hub:    source.NewHub(),
		common: c,
		locks:  locks.New(c),
		owners: owners.New(c),
		hot:    hot.New(c),
		detail: detail.New(c),
		dialog: dialog.New(c),
	}
	m.pages = [pageCount]common.Component{m.locks, m.owners, m.hot, m.detail}
	m.filter = input.New(c, "/")
	m.filter.Placeholder = "key, glob * ? [, =exact or owner:… (enter keeps, esc clears)"
	m.filter.CharLimit = 256
	m.command = input.New(c, ":")
	m.command.Placeholder = "locks, owners, hot, detail, help or quit (enter runs, esc drops)"
	m.command.CharLimit = 32
	return m
}

// Init starts the background work: the hub's Views, the heartbeat (which starts the first
// refresh), the re-reads of countdowns at zero and the event subscription; it asks the terminal for its background colour.
func (m *model) Init() tea.Cmd {
	// The first refresh starts once the heartbeat knows whether keyspace notifications are on
	// (onHeartbeat), after their subscription when they are.
	cmds := []tea.Cmd{tea.RequestBackgroundColor, m.waitView(), m.heartbeat()}
	m.rt.goroutine(func(ctx context.Context) { m.src.RereadExpired(ctx, m.hub) })
	if m.cfg.Events != nil {
		m.events.on = true
		ch := m.cfg.Events.C()
		m.rt.goroutine(func(ctx context.Context) { m.hub.Forward(ctx, ch) })
	} else if !m.cfg.NoEvents {
		cmds = append(cmds, m.subscribeEvents())
	}
	return tea.Batch(cmds...)
}

// Update handles one message.
func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.setSize(msg.Width, msg.Height)
		return m, nil
	case tea.BackgroundColorMsg:
		m.common.Styles = common.NewStyles(msg.IsDark(), m.cfg.NoColor)
		return m, nil
	case tea.KeyPressMsg:
		return m, m.handleKey(msg)
	case viewMsg:
		m.setView(msg.view)
		return m, tea.Batch(m.waitView(), m.startTicking())
	case tickMsg:
		m.ticking = false
		return m, m.startTicking()
	case heartbeatMsg:
		return m, m.onHeartbeat(msg)
	case heartbeatDueMsg:
		return m, m.heartbeat()
	case scanDoneMsg:
		return m, m.onScanDone(msg)
	case scanDueMsg:
		if msg.gen != m.scanGen || m.scanning || m.conn.down {
			return m, nil
		}
		return m, m.scan()
	case keyspaceStartedMsg:
		return m, m.onKeyspaceStarted(msg)
	case keyspaceReadMsg:
		return m, m.onKeyspaceRead(msg)
	case keyspaceRetryMsg:
		return m, m.readKeyspace()
	case eventsStartedMsg:
		m.onEventsStarted(msg)
		return m, nil
	case sampleDueMsg:
		if msg.gen != m.sampleGen || m.sampler == nil {
			return m, nil
		}
		return m, m.sampleStep()
	case sampleMsg:
		return m, m.onSample(msg)
	case lookupMsg:
		m.onLookup(msg)
		return m, nil
	case releaseDoneMsg:
		m.onReleaseDone(msg)
		return m, m.refreshNow()
	case releaseAllDoneMsg:
		m.onReleaseAllDone(msg)
		return m, m.refreshNow()
	}
	if paste, ok := msg.(tea.PasteMsg); ok {
		switch {
		case m.editing && m.filter.Update(paste):
			return m, m.applyFilter(m.filter.Value())
		case m.commanding:
			m.command.Update(paste)
		}
	}
	return m, nil
}

func (m *model) setSize(width, height int) {
	m.common.SetSize(width, height)
	h := max(height-chromeLines, 1)
	for _, p := range m.pages {
		p.SetSize(width, h)
	}
	m.dialog.SetSize(width, h)
}

func (m *model) setView(v *store.View) {
	m.view = v
	m.locks.SetView(v)
	m.owners.SetView(v)
	m.hot.SetView(v)
	m.detail.SetView(v)
}

// setQuery asks the hub for a View of q (no I/O: a hand-off to the hub's goroutine).
func (m *model) setQuery(q store.Query) {
	m.query = q
	m.hub.SetQuery(q)
}

// counting reports whether anything on screen changes with time alone: a countdown, or the
// age of stale data.
func (m *model) counting() bool {
	if m.conn.down {
		return true
	}
	switch m.active {
	case pageLocks:
		return m.locks.Counting()
	case pageDetail:
		return m.detail.Counting()
	}
	return false
}

// startTicking starts the countdown frames if something counts and they are not running.
func (m *model) startTicking() tea.Cmd {
	if m.ticking || !m.counting() {
		return nil
	}
	m.ticking = true
	return m.after(tickEvery, tickMsg{})
}

func (m *model) setNotice(text string, isErr bool) {
	m.notice = notice{text: text, err: isErr, until: m.common.Now().Add(noticeFor)}
}

// setStickyNotice shows text until the next notice: for what must not be missed.
func (m *model) setStickyNotice(text string) {
	m.notice = notice{text: text, err: true}
}

// pollInterval is the wait between the starts of two refreshes: Config.Refresh, or the time a
// refresh takes within the budget, when polling; while keyspace notifications keep the table
// live, the drift rescan's interval (source.DriftInterval: at least Config.KeyspacePoll).
func (m *model) pollInterval() time.Duration {
	if m.keyspace.on {
		return source.DriftInterval(m.cfg.KeyspacePoll, m.lastScan)
	}
	return max(m.cfg.Refresh, m.lastScan.Took)
}

// stale reports whether the data on screen is not current, and its age.
func (m *model) stale() (bool, time.Duration) {
	age := m.common.Now().Sub(m.lastGood)
	if m.conn.down {
		return m.loaded, age // nothing loaded yet: nothing stale ("loading…" says it)
	}
	limit := max(3*m.pollInterval(), 5*time.Second)
	return m.loaded && age > limit+m.lastScan.Took, age
}

func isCancel(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// subscription is one feed the console keeps (keyspace notifications, lock events): live, being
// made, or failed and waiting for its retry.
type subscription struct {
	on      bool
	pending bool // the subscription is being made
	err     error
	retry   source.Backoff
}

// start marks the subscription as being made.
func (f *subscription) start() { f.pending = true }

// idle reports whether the feed is neither live nor being made.
func (f *subscription) idle() bool { return !f.on && !f.pending }

// failed records a failed attempt at now and reports whether it is the first in a row.
func (f *subscription) failed(err error, now time.Time) (first bool) {
	f.pending, f.err = false, err
	return f.retry.Fail(now)
}

// up records a subscription made and reports whether it had been failing.
func (f *subscription) up() (recovered bool) {
	recovered = f.err != nil
	f.on, f.pending, f.err = true, false, nil
	f.retry.Reset()
	return recovered
}

// after delivers msg after d (see runtime.after).
func (m *model) after(d time.Duration, msg tea.Msg) tea.Cmd { return m.rt.after(d, msg) }
