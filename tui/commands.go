package tui

import (
	"context"
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/locktui/locktui/events"
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

// heartbeat sends PING, and once per connection INFO server and CONFIG GET.
func (m *model) heartbeat() tea.Cmd {
	needInfo := !m.conn.infoOK
	return m.rt.cmd(func(ctx context.Context) tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		lat, err := m.src.Ping(ctx)
		if err != nil {
			return heartbeatMsg{err: err}
		}
		msg := heartbeatMsg{latency: lat}
		if needInfo {
			info, err := m.src.ServerInfo(ctx)
			if err != nil {
				return heartbeatMsg{err: err}
			}
			msg.info = &info
		}
		return msg
	})
}

func (m *model) onHeartbeat(msg heartbeatMsg) tea.Cmd {
	if msg.err != nil {
		if isCancel(msg.err) && m.rt.ctx.Err() != nil {
			return nil
		}
		m.conn.down = true
		m.conn.infoOK = false
		m.conn.err = msg.err
		now := m.common.Now()
		m.conn.retry.Fail(now)
		wait := m.conn.retry.Wait(now)
		m.setStickyNotice("Redis does not answer: " + msg.err.Error())
		return m.after(wait, heartbeatDueMsg{})
	}
	wasDown := m.conn.down
	m.conn.down, m.conn.err = false, nil
	m.conn.retry.Reset()
	if wasDown {
		m.setNotice("Redis answers again: refreshing", false)
	}
	m.conn.latency = msg.latency
	var cmds []tea.Cmd
	if msg.info != nil {
		m.conn.info, m.conn.infoOK = *msg.info, true
	}
	// A subscription that failed is tried again once Redis answers again, and while it does,
	// with backoff.
	now := m.common.Now()
	subscribing := m.conn.infoOK && m.conn.info.Keyspace() && m.keyspace.idle() &&
		(msg.info != nil || m.keyspace.retry.Due(now))
	if subscribing {
		cmds = append(cmds, m.subscribeKeyspace(m.conn.info.DB))
	}
	if m.wantEvents() && m.events.idle() && (wasDown || m.events.retry.Due(now)) {
		cmds = append(cmds, m.subscribeEvents())
	}
	// The first refresh, and one after an outage; held for a keyspace subscription being made,
	// which starts it when it is confirmed (or failed).
	if (wasDown || m.scanGen == 0) && !m.scanning && !m.scanHeld {
		if subscribing {
			m.scanHeld = true
		} else {
			cmds = append(cmds, m.scan())
		}
	}
	cmds = append(cmds, m.after(heartbeatEvery, heartbeatDueMsg{}))
	return tea.Batch(cmds...)
}

// scan runs one full refresh; the batches go straight to the hub.
func (m *model) scan() tea.Cmd {
	m.scanning = true
	m.scanGen++
	return m.rt.cmd(func(ctx context.Context) tea.Msg {
		st, err := m.src.Scan(ctx, m.hub)
		return scanDoneMsg{stats: st, err: err}
	})
}

// refreshNow starts a refresh unless one is running.
func (m *model) refreshNow() tea.Cmd {
	if m.scanning || m.conn.down {
		return nil
	}
	return m.scan()
}

func (m *model) onScanDone(msg scanDoneMsg) tea.Cmd {
	m.scanning = false
	if msg.err != nil {
		if isCancel(msg.err) && m.rt.ctx.Err() != nil {
			return nil
		}
		// The heartbeat notices the outage and restarts refreshing once Redis answers; if
		// Redis does answer (a refused command, say), try again after the interval.
		m.setNotice("refresh failed: "+msg.err.Error(), true)
		gen := m.scanGen
		return m.after(max(m.pollInterval(), source.RetryMin), scanDueMsg{gen: gen})
	}
	m.lastScan = msg.stats
	m.loaded = true
	m.locks.SetLoaded()
	m.lastGood = m.common.Now()
	if m.scanAgain {
		m.scanAgain = false
		return m.scan()
	}
	gen := m.scanGen
	wait := max(m.pollInterval()-msg.stats.Took, 0)
	return m.after(wait, scanDueMsg{gen: gen})
}

// rescan starts a refresh because notifications may have been missed: at once, or, when one
// is under way (it may have walked past the keys concerned), as soon as it ends. While Redis is
// down the heartbeat starts one when it answers again.
func (m *model) rescan() tea.Cmd {
	if m.scanning {
		m.scanAgain = true
		return nil
	}
	return m.refreshNow()
}

// wantEvents reports whether the console subscribes to lock events itself.
func (m *model) wantEvents() bool { return m.cfg.Events == nil && !m.cfg.NoEvents }

// subscribeEvents subscribes to the namespace's lock events and forwards them to the hub.
func (m *model) subscribeEvents() tea.Cmd {
	m.events.start()
	return m.rt.cmd(func(ctx context.Context) tea.Msg {
		sub, err := events.Subscribe(ctx, m.cfg.Client, m.cfg.Namespace)
		if err != nil {
			return eventsStartedMsg{err: err}
		}
		m.rt.onClose(func() { _ = sub.Close() })
		m.rt.goroutine(func(ctx context.Context) { m.hub.Forward(ctx, sub.C()) })
		return eventsStartedMsg{}
	})
}

// onEventsStarted records the result of subscribing to lock events; a failure is retried by
// the heartbeat, with backoff (go-redis itself resubscribes a subscription that was made).
func (m *model) onEventsStarted(msg eventsStartedMsg) {
	if msg.err != nil {
		if isCancel(msg.err) && m.rt.ctx.Err() != nil {
			m.events.pending = false
			return
		}
		if m.events.failed(msg.err, m.common.Now()) {
			m.setNotice("lock events unavailable (no contention from events), retrying: "+msg.err.Error(), true)
		}
		return
	}
	if m.events.up() {
		m.setNotice("lock events subscribed", false)
	}
}

// subscribeKeyspace subscribes to the keyspace notifications of the namespace.
func (m *model) subscribeKeyspace(db int) tea.Cmd {
	m.keyspace.start()
	return m.rt.cmd(func(ctx context.Context) tea.Msg {
		ks, err := m.src.SubscribeKeyspace(ctx, db)
		if err != nil {
			return keyspaceStartedMsg{err: err}
		}
		m.rt.onClose(ks.Close)
		return keyspaceStartedMsg{ks: ks}
	})
}

func (m *model) onKeyspaceStarted(msg keyspaceStartedMsg) tea.Cmd {
	if msg.err != nil {
		if isCancel(msg.err) && m.rt.ctx.Err() != nil {
			m.keyspace.pending = false
			return nil
		}
		if m.keyspace.failed(msg.err, m.common.Now()) {
			m.setNotice("keyspace notifications unavailable, polling only: "+msg.err.Error(), true)
		}
		return m.releaseHeldScan()
	}
	m.keyspace.up()
	m.ks = msg.ks
	m.scanHeld = false
	// What changed before the subscription is caught by a refresh now; from here on the
	// notifications keep the table live and refreshes only repair drift.
	return tea.Batch(m.readKeyspace(), m.rescan())
}

// releaseHeldScan starts the refresh held for a keyspace subscription that did not come up.
func (m *model) releaseHeldScan() tea.Cmd {
	if !m.scanHeld {
		return nil
	}
	m.scanHeld = false
	return m.refreshNow()
}

// readKeyspace waits for notified keys and reads them (coalesced, within the budget).
func (m *model) readKeyspace() tea.Cmd {
	ks := m.ks
	return m.rt.cmd(func(ctx context.Context) tea.Msg {
		keys, lost, err := ks.Next(ctx, source.KeyspaceReadBatch)
		if err != nil {
			return keyspaceReadMsg{err: err}
		}
		if _, err := m.src.ReadInto(ctx, m.hub, keys); err != nil {
			return keyspaceReadMsg{err: err}
		}
		return keyspaceReadMsg{keys: len(keys), lost: lost}
	})
}

func (m *model) onKeyspaceRead(msg keyspaceReadMsg) tea.Cmd {
	switch {
	case msg.err != nil && isCancel(msg.err) && m.rt.ctx.Err() != nil:
		return nil
	case msg.err != nil:
		// Redis is away: the heartbeat shows it; go-redis resubscribes by itself. Try again
		// after a pause so an outage does not spin.
		return m.after(time.Second, keyspaceRetryMsg{})
	}
	m.lastGood = m.common.Now()
	cmds := []tea.Cmd{m.readKeyspace()}
	if msg.lost {
		cmds = append(cmds, m.rescan())
	}
	return tea.Batch(cmds...)
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
