package tui

import (
	"context"
	"fmt"
	"strconv"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/locktui/locktui/audit"
	"github.com/locktui/locktui/tui/store"
)

// mutationTimeout bounds a release and its audit write.
const mutationTimeout = 10 * time.Second

// emptyOwnerBulk is why D refuses the empty owner: the provider (like stock Medusa's
// releaseAll) takes "" for "no owner given" and releases the anonymous "*" locks instead.
const emptyOwnerBulk = `the empty owner "" cannot be released in bulk: release its keys one by one with d`

// quote shows an owner as a quoted string, so an empty or blank owner, or one with control
// characters, is visible as such.
func quote(owner string) string { return strconv.Quote(owner) }

// askRelease opens the dialog for the force-release of the selected lock.
func (m *model) askRelease() {
	e, ok := m.selectedEntry()
	if !ok {
		m.setNotice("no lock selected", true)
		return
	}
	if !e.GoneAt.IsZero() {
		m.setNotice(fmt.Sprintf("%s is already gone", e.Key), true)
		return
	}
	if e.Foreign {
		m.setNotice(fmt.Sprintf("%s is not a lock (not a string): locktui does not delete it", e.Key), true)
		return
	}
	lines := []string{
		"key    " + e.Key,
		"owner  " + quote(e.Owner),
		"",
		"Deleted only if this owner still holds it (compare-and-delete).",
		m.auditLine(),
	}
	m.dialog.Open("Force-release this lock?", lines, releaseReq{key: e.Key, owner: e.Owner})
}

// askReleaseAll opens the dialog for releasing every lock of the selected owner.
func (m *model) askReleaseAll() {
	owner, ok := m.selectedOwner()
	if !ok {
		m.setNotice("no owner selected", true)
		return
	}
	if owner == "" {
		m.setNotice(emptyOwnerBulk, true)
		return
	}
	n := m.view.OwnerKeys[owner]
	lines := []string{
		"owner  " + quote(owner),
		fmt.Sprintf("This releases %s held by this owner.", plural(n, "lock", "locks")),
		"",
		"Each key is deleted only while this owner still holds it (compare-and-unlink).",
		m.auditLine(),
	}
	m.dialog.Open(fmt.Sprintf("Release all %s of this owner?", plural(n, "lock", "locks")), lines,
		releaseAllReq{owner: owner, count: n})
}

func (m *model) auditLine() string {
	if m.cfg.Audit == nil {
		return "Not audited: no audit trail is configured."
	}
	return "Audited as " + m.cfg.Operator + "."
}

// confirmed runs what the dialog was opened for.
func (m *model) confirmed(payload any) tea.Cmd {
	if m.cfg.ReadOnly { // unreachable through the keys; defence in depth
		m.setNotice("read-only: nothing was released", true)
		return nil
	}
	switch req := payload.(type) {
	case releaseReq:
		m.setNotice(fmt.Sprintf("releasing %s…", req.key), false)
		return m.release(req)
	case releaseAllReq:
		if req.owner == "" { // unreachable through the keys (askReleaseAll refuses it)
			m.setNotice(emptyOwnerBulk, true)
			return nil
		}
		m.setNotice(fmt.Sprintf("releasing the locks of %s…", quote(req.owner)), false)
		return m.releaseAll(req)
	}
	return nil
}

// release force-releases one key if req.owner still holds it, audits the result and re-reads
// the key so the table shows it at once.
func (m *model) release(req releaseReq) tea.Cmd {
	return m.rt.mutation(func(ctx context.Context) tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, mutationTimeout)
		defer cancel()
		res := releaseDoneMsg{key: req.key, owner: req.owner}
		res.released, res.err = m.cfg.Provider.ForceRelease(ctx, req.key, req.owner)
		result := audit.ResultReleased
		switch {
		case res.err != nil:
			result = audit.ResultError(res.err)
		case !res.released:
			result = audit.ResultNotHeld
			if l, ok, err := m.cfg.Provider.Get(ctx, req.key); err == nil && ok {
				res.nowOwner, res.nowHeld = l.Owner, true
			}
		}
		count := 0
		if res.released {
			count = 1
		}
		res.auditErr = m.audit(ctx, audit.Record{Action: audit.ActionForceRelease, Key: req.key,
			Owner: req.owner, Result: result, Count: count})
		m.reread(ctx, req.key)
		return res
	})
}

// releaseAll releases every lock of req.owner (compare-and-unlink per key) and audits it.
func (m *model) releaseAll(req releaseAllReq) tea.Cmd {
	return m.rt.mutation(func(ctx context.Context) tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, mutationTimeout)
		defer cancel()
		res := releaseAllDoneMsg{owner: req.owner}
		res.count, res.err = m.cfg.Provider.ReleaseAll(ctx, req.owner)
		result := audit.ResultReleased
		switch {
		case res.err != nil:
			result = audit.ResultError(res.err)
		case res.count == 0:
			result = audit.ResultNotHeld
		}
		res.auditErr = m.audit(ctx, audit.Record{Action: audit.ActionReleaseOwner, Owner: req.owner,
			Result: result, Count: res.count})
		return res
	})
}

// audit writes r. The write gets a deadline of its own, detached from the mutation's: a release
// that used up its time, or a console that is quitting, must still leave its record.
func (m *model) audit(ctx context.Context, r audit.Record) error {
	if m.cfg.Audit == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), mutationTimeout)
	defer cancel()
	r.Time = time.Now()
	r.Operator = m.cfg.Operator
	r.Namespace = m.cfg.Namespace
	r.Server = m.cfg.URL
	if err := m.cfg.Audit.Write(ctx, r); err != nil {
		return fmt.Errorf("audit write failed: %w", err)
	}
	return nil
}

// reread reads key again and hands it to the hub, so a release shows without waiting for the
// next refresh.
func (m *model) reread(ctx context.Context, key string) {
	found, absent, at, err := m.src.ReadUnpaced(ctx, []string{key})
	if err != nil {
		return
	}
	if len(found) > 0 {
		m.hub.Observe(found, at, 0)
	}
	if len(absent) > 0 {
		m.hub.Absent(absent, at)
	}
}

func (m *model) onReleaseDone(msg releaseDoneMsg) {
	switch {
	case msg.err != nil:
		m.setNotice(fmt.Sprintf("release of %s failed: %v", msg.key, msg.err), true)
	case msg.released:
		m.setNotice(fmt.Sprintf("released %s (owner %s)", msg.key, quote(msg.owner)), false)
	case msg.nowHeld:
		m.setNotice(fmt.Sprintf("not released: owner of %s changed to %s", msg.key, quote(msg.nowOwner)), true)
	default:
		m.setNotice(fmt.Sprintf("not released: %s is already gone", msg.key), true)
	}
	if msg.auditErr != nil {
		m.setStickyNotice("AUDIT FAILED for " + msg.key + ": " + msg.auditErr.Error() + " (" + m.notice.text + ")")
	}
}

func (m *model) onReleaseAllDone(msg releaseAllDoneMsg) {
	switch {
	case msg.err != nil:
		m.setNotice(fmt.Sprintf("release of the locks of %s failed after %s: %v", quote(msg.owner),
			plural(msg.count, "lock", "locks"), msg.err), true)
	default:
		m.setNotice(fmt.Sprintf("released %s of %s", plural(msg.count, "lock", "locks"), quote(msg.owner)), msg.count == 0)
	}
	if msg.auditErr != nil {
		m.setStickyNotice("AUDIT FAILED for owner " + quote(msg.owner) + ": " + msg.auditErr.Error() + " (" + m.notice.text + ")")
	}
}

// selectedEntry is the lock under the cursor of the active page.
func (m *model) selectedEntry() (*store.Entry, bool) {
	switch m.active {
	case pageLocks:
		return m.locks.Selected()
	case pageHot:
		if row, ok := m.hot.Selected(); ok && row.Entry != nil {
			return row.Entry, true
		}
	case pageDetail:
		return m.detail.Selected()
	}
	return nil, false
}

// selectedOwner is the owner under the cursor of the active page.
func (m *model) selectedOwner() (string, bool) {
	if m.active == pageOwners {
		o, ok := m.owners.Selected()
		return o.Owner, ok
	}
	e, ok := m.selectedEntry()
	if !ok || e.Foreign || !e.GoneAt.IsZero() {
		return "", false
	}
	return e.Owner, true
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
