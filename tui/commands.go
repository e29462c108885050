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
	if m.sampleRun != 0 && u.Status.SampleDone >= m.sampleRun {
		m.sampler, m.sampleRun = nil, 0 // the run ended by itself
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

// toggleSampling starts sampling the keys on screen (the watcher runs it), or stops the run
// in progress.
func (m *model) toggleSampling() tea.Cmd {
	if m.sampler != nil {
		m.sampler, m.sampleRun = nil, 0
		m.watch.Sample(nil)
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
	m.sampleRun = m.watch.Sample(m.sampler)
	m.setNotice(fmt.Sprintf("sampling %s for %s: +%d commands/s", plural(len(m.sampler.Keys()), "key", "keys"),
		source.SampleFor, m.sampler.Cost()), false)
	return nil
}

// sampleStats are the stats of the run the operator started, once the watcher reports it.
func (m *model) sampleStats() source.SampleStats {
	if m.st.Sample.ID == m.sampleRun {
		return m.st.Sample.Stats
	}
	return source.SampleStats{Left: source.SampleFor, Keys: len(m.sampler.Keys())}
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
