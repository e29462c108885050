package tui

import (
	"context"
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/locktui/locktui/tui/source"
)

// waitView waits for the hub's next View.
func (m *model) waitView() tea.Cmd {
	return m.rt.cmd(func(ctx context.Context) tea.Msg {
		v, ok := m.hub.Next(ctx)
		if !ok {
			return nil
		}
		return viewMsg{view: v}
	})
}

// waitUpdate waits for the watcher's next Update.
func (m *model) waitUpdate() tea.Cmd {
	return m.rt.cmd(func(ctx context.Context) tea.Msg {
		u, ok := m.watch.Next(ctx)
		if !ok {
			return nil
		}
		return u
	})
}

// onUpdate takes the watcher's new status and notice.
func (m *model) onUpdate(u source.Update) {
	if u.Status.Loaded() && !m.st.Loaded() {
		m.locks.SetLoaded()
	}
	m.st = u.Status
	switch {
	case u.Notice == "":
	case u.Sticky:
		m.setStickyNotice(u.Notice)
	default:
		m.setNotice(u.Notice, u.Err)
	}
}

// toggleSampling starts sampling the keys on screen, or stops a run in progress.
func (m *model) toggleSampling() tea.Cmd {
	m.sampleGen++
	if m.sampler != nil {
		m.sampler = nil
		m.setNotice("sampling stopped", false)
		return nil
	}
	if m.view == nil {
		m.setNotice("nothing to sample yet: the first refresh is not done", true)
		return nil
	}
	var keys []string
	switch m.active {
	case pageHot:
		if row, ok := m.hot.Selected(); ok {
			keys = append(keys, row.Key)
		}
		for _, h := range m.view.Hot {
			if len(keys) < source.SampleMaxKeys && (len(keys) == 0 || h.Key != keys[0]) {
				keys = append(keys, h.Key)
			}
		}
	case pageDetail:
		if m.query.Detail != "" {
			keys = []string{m.query.Detail}
		}
	default:
		keys = m.locks.Visible()
	}
	if len(keys) == 0 {
		m.setNotice("nothing to sample: no keys on screen", true)
		return nil
	}
	m.sampler = m.src.NewSampler(keys)
	m.sampleStats = source.SampleStats{Left: source.SampleFor, Keys: len(m.sampler.Keys())}
	m.setNotice(fmt.Sprintf("sampling %d keys for %s: +%d commands/s", len(m.sampler.Keys()),
		source.SampleFor, m.sampler.Cost()), false)
	return m.sampleStep()
}

func (m *model) sampleStep() tea.Cmd {
	sm, gen := m.sampler, m.sampleGen
	return m.rt.cmd(func(ctx context.Context) tea.Msg {
		st, err := sm.Step(ctx, m.hub)
		return sampleMsg{gen: gen, stats: st, err: err}
	})
}

func (m *model) onSample(msg sampleMsg) tea.Cmd {
	if msg.gen != m.sampleGen || m.sampler == nil {
		return nil
	}
	if msg.err == nil {
		m.sampleStats = msg.stats
	}
	if m.sampler.Done(m.common.Now()) {
		m.sampler = nil
		m.setNotice("sampling done: hand-offs seen are in the hot view (3)", false)
		return nil
	}
	gen := m.sampleGen
	return m.after(source.SampleInterval, sampleDueMsg{gen: gen})
}

// lookup is the exact-key read of the filter "=key".
type lookup struct {
	key  string
	gen  int
	done bool
	// found is true when the key exists; err is why the read failed.
	found bool
	err   error
}

// lookupKey reads key at once (GET, PTTL and holder record, outside the budget: the operator asked for it by
// name) and hands it to the hub, so an exact filter shows its key without waiting for a scan.
func (m *model) lookupKey(key string) tea.Cmd {
	gen := m.lookup.gen + 1
	m.lookup = lookup{key: key, gen: gen}
	return m.rt.cmd(func(ctx context.Context) tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		found, err := m.src.ReadUnpacedInto(ctx, m.hub, []string{key})
		if err != nil {
			return lookupMsg{gen: gen, err: err}
		}
		return lookupMsg{gen: gen, found: found > 0}
	})
}

func (m *model) onLookup(msg lookupMsg) {
	if msg.gen != m.lookup.gen {
		return // the filter changed since
	}
	m.lookup.done, m.lookup.found, m.lookup.err = true, msg.found, msg.err
}
