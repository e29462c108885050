package tui

import (
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
	text     string
	err      bool
	until    time.Time // zero: until the next notice
	progress bool      // the count of a release of an owner's locks under way (showBulkProgress)
}

// model is the root model: it routes keys, owns the pages, the dialog and the filter, and
// shows what the watcher (whose scheduler runs all background work) and the hub hand it; only the
// operator's own one-off actions (an exact lookup, a release) run as its tea.Cmds.
type model struct {
	cfg    Config
	rt     *runtime
	src    *source.Source
	hub    *source.Hub
	watch  *source.Watcher
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
	notice  notice
	ticking bool
	// bulk is the release of an owner's locks under way (D), nil when none is: its count so
	// far is shown while it walks.
	bulk *bulkRelease
	// st is the watcher's latest status: the connection, the feeds, the refreshes.
	st source.Status

	// lookup is the exact-key read of the current filter.
	lookup lookup

	// evicts is the server's maxmemory-policy when it can evict held locks ("" otherwise).
	evicts string

	// sampler is the sampling run the operator started, sampleRun its ID (Watcher.Sample).
	sampler   *source.Sampler
	sampleRun int
}

// newModel builds the root model; it does no I/O.
func newModel(cfg Config, rt *runtime) *model {
	c := common.New(cfg.ReadOnly, cfg.NoColor)
	src := source.New(source.Options{Client: cfg.Client, Namespace: cfg.Namespace, Budget: cfg.Budget})
	hub := source.NewHub()
	wopts := source.WatchOptions{Refresh: cfg.Refresh, KeyspacePoll: cfg.KeyspacePoll, Events: !cfg.NoEvents}
	if cfg.Events != nil {
		wopts.EventsFrom = cfg.Events.C()
	}
	m := &model{
		cfg:    cfg,
		rt:     rt,
		src:    src,
		hub:    hub,
		watch:  source.NewWatcher(src, hub, wopts),
		common: c,
		locks:  locks.New(c),
		owners: owners.New(c),
		hot:    hot.New(c),
		detail: detail.New(c),
		dialog: dialog.New(c),
	}
	m.pages = [pageCount]common.Component{m.locks, m.owners, m.hot, m.detail}
	m.st = m.watch.Status()
	m.filter = input.New(c, "/")
	m.filter.Placeholder = "key, glob * ? [, =exact, owner:… or holder:… (enter keeps, esc clears)"
	m.filter.CharLimit = 256
	m.command = input.New(c, ":")
	m.command.Placeholder = "locks, owners, hot, detail, help or quit (enter runs, esc drops)"
	m.command.CharLimit = 32
	return m
}

// Init starts the background work, all of it the watcher's jobs (the heartbeat, the
// refreshes, the keyspace and lock-event feeds, the re-reads of countdowns at zero, the hub's
// builds); it asks the terminal for its background colour.
func (m *model) Init() tea.Cmd {
	m.rt.goroutine(m.watch.Run)
	return tea.Batch(tea.RequestBackgroundColor, m.waitView(), m.waitUpdate(), m.readEviction())
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
	case evictionMsg:
		m.evicts = msg.policy
		return m, nil
	case viewMsg:
		m.setView(msg.view)
		return m, tea.Batch(m.waitView(), m.startTicking())
	case tickMsg:
		m.ticking = false
		m.showBulkProgress()
		return m, m.startTicking()
	case source.Update:
		m.onUpdate(msg)
		return m, tea.Batch(m.waitUpdate(), m.startTicking())
	case lookupMsg:
		m.onLookup(msg)
		return m, nil
	case releaseDoneMsg:
		m.onReleaseDone(msg)
		m.watch.Refresh()
		if msg.told {
			return m, m.awaitFreed(awaitFreedReq{done: msg})
		}
		return m, nil
	case freedMsg:
		m.onFreed(msg)
		m.watch.Refresh()
		return m, nil
	case releaseAllDoneMsg:
		m.onReleaseAllDone(msg)
		m.watch.Refresh()
		return m, nil
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
	if m.st.Conn.Down || m.bulk != nil {
		return true
	}
	switch m.active {
	case pageLocks:
		return m.locks.Counting()
	case pageOwners:
		return m.owners.Counting()
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

// stale reports whether the data on screen is not current, and its age.
func (m *model) stale() (bool, time.Duration) {
	age := m.common.Now().Sub(m.st.LastGood)
	loaded := m.st.Loaded()
	if m.st.Conn.Down {
		return loaded, age // nothing loaded yet: nothing stale ("loading…" says it)
	}
	limit := max(3*m.st.Interval, 5*time.Second)
	return loaded && age > limit+m.st.LastScan.Took, age
}

// after delivers msg after d (see runtime.after).
func (m *model) after(d time.Duration, msg tea.Msg) tea.Cmd { return m.rt.after(d, msg) }
