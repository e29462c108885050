package tui

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/audit"
	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
	"github.com/locktui/locktui/tui/source"
	"github.com/locktui/locktui/tui/store"
)

// clock is the fixed time of the model tests.
var clock = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// newTestModel returns a root model of size 80×24 whose commands are never run: the tests
// feed it messages and read its screen. Its client points nowhere and is never used.
func newTestModel(t *testing.T, cfg Config) *model {
	t.Helper()
	if cfg.Client == nil {
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
		t.Cleanup(func() { _ = c.Close() })
		cfg.Client = c
	}
	if cfg.URL == "" {
		cfg.URL = "redis://:secret@localhost:6390/0"
	}
	cfg.NoColor = true
	cfg.Operator = "tester@host"
	rt := newRuntime(t.Context())
	t.Cleanup(rt.shutdown)
	m := newModel(cfg.withDefaults(), rt)
	m.common.Now = func() time.Time { return clock }
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	return m
}

// screen returns what the model shows, without escape sequences.
func screen(m *model) string { return ansi.Strip(m.View().Content) }

// press sends one key press (a printable key, or a name like "enter", "esc", "tab").
func press(m *model, keys ...string) tea.Cmd {
	var last tea.Cmd
	for _, k := range keys {
		_, last = m.Update(keyMsg(k))
	}
	return last
}

func keyMsg(k string) tea.KeyPressMsg {
	switch k {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	}
	r := []rune(k)[0]
	return tea.KeyPressMsg{Code: r, Text: k}
}

// sampleStore is a namespace with one lock in each state.
func sampleStore() *store.Store {
	s := store.New()
	s.Observe([]operator.Lock{
		{Key: "cart:1", Owner: "execute:0b5a3c1e-0000-4000-8000-000000000001", TTL: 60 * time.Second},
		{Key: "cart:2", Owner: "execute:0b5a3c1e-0000-4000-8000-000000000001", TTL: 13 * time.Second},
		{Key: "stuck:job", Owner: "*", TTL: provider.NoExpiry},
		{Key: "order:7", Owner: "svc-orders", TTL: 30 * time.Second},
	}, clock.Add(-10*time.Second), 1)
	s.Observe([]operator.Lock{
		{Key: "order:7", Owner: "svc-orders", TTL: 30 * time.Second},
	}, clock.Add(-time.Second), 2)
	s.Event(store.Event{Kind: provider.EventWaiting, Key: "cart:1", Owner: "w1", Time: clock.Add(-time.Second)})
	return s
}

// feed builds a View of s for the model's current query and hands it to the model.
func feed(m *model, s *store.Store) *store.View {
	v := s.Build(m.query, clock)
	m.Update(viewMsg{view: v})
	return v
}

// connected tells the model its heartbeat and first refresh succeeded.
func connected(m *model) {
	status(m, func(st *source.Status) {
		st.Conn = source.Conn{Latency: 420 * time.Microsecond, Info: source.ServerInfo{Version: "7.0.15"}, InfoOK: true}
		refreshed(st, source.ScanStats{Took: 2 * time.Millisecond})
	})
}

// status hands the model a watcher Update: its current status changed by f, with notice u
// (its Status is ignored).
func status(m *model, f func(st *source.Status), u ...source.Update) {
	st := m.st
	f(&st)
	st.Interval = m.watch.Interval(st)
	var up source.Update
	if len(u) > 0 {
		up = u[0]
	}
	up.Status = st
	m.Update(up)
}

// refreshed records a full refresh done at clock in st.
func refreshed(st *source.Status, stats source.ScanStats) {
	st.Scanning, st.LastScan, st.LastGood = false, stats, clock
	st.Refreshes++
}

// memorySink is an audit.Sink that keeps records in memory, or fails with err.
type memorySink struct {
	mu      sync.Mutex
	records []audit.Record
	err     error
}

func (s *memorySink) Write(_ context.Context, r audit.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	s.records = append(s.records, r)
	return nil
}

// Where names the sink as the dialog shows it (see audit.Where).
func (s *memorySink) Where() string { return "test-audit.jsonl" }

func (s *memorySink) all() []audit.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]audit.Record(nil), s.records...)
}

// lines splits a screen into its lines.
func lines(s string) []string { return strings.Split(s, "\n") }
