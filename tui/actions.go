package tui

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/locktui/locktui/audit"
	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
	"github.com/locktui/locktui/tui/common"
	"github.com/locktui/locktui/tui/components/dialog"
	"github.com/locktui/locktui/tui/store"
)

// mutationTimeout bounds a release and its audit write.
const mutationTimeout = 10 * time.Second

// emptyOwnerBulk is why D refuses the empty owner: ReleaseAllWith (like stock Medusa's
// releaseAll) takes "" for "no owner given" and releases the anonymous "*" locks instead.
const emptyOwnerBulk = `the empty owner "" cannot be released in bulk: release its keys one by one with d`

// quote shows an owner as a quoted string, so an empty or blank owner, or one with control
// characters, is visible as such (the dialog and the notices quote every owner; the tables
// quote those operator.Printable does).
func quote(owner string) string { return strconv.Quote(owner) }

// printable is operator.Printable, for keys in notices.
func printable(key string) string { return operator.Printable(key) }

// askRelease opens the dialog for the force-release of the selected lock.
func (m *model) askRelease() {
	e, ok := m.selectedEntry()
	if !ok {
		m.setNotice("no lock selected", true)
		return
	}
	if !e.GoneAt.IsZero() {
		m.setNotice(fmt.Sprintf("%s is already gone", printable(e.Key)), true)
		return
	}
	if e.Foreign {
		m.setNotice(fmt.Sprintf("%s is not a lock (not a string): locktui does not delete it", printable(e.Key)), true)
		return
	}
	lines := []string{
		"key    " + operator.Printable(e.Key),
		"owner  " + quote(e.Owner),
		"holder " + store.NoRecordWhy,
	}
	if e.Record != nil {
		lines[2] = "holder " + e.Record.Holder.String()
		lines = append(lines, "held   "+common.Held(e.HeldFor(m.common.Now())))
		if e.Record.FencingToken > 0 { // 0: a record written before records kept one
			lines = append(lines, "token  "+strconv.FormatInt(e.Record.FencingToken, 10))
		}
	}
	seen := operator.Lock{Key: e.Key, Owner: e.Owner, Record: e.Record, TTL: provider.NoExpiry}
	if !e.NoTTL {
		seen.TTL = e.TTL(m.common.Now())
	}
	why := operator.CannotBeTold(seen)
	lines = append(lines, "", "Only if this same hold is still there (compare-and-delete).")
	if why != "" {
		lines = append(lines, "Freed at once: "+why+".", m.auditLine())
		m.dialog.Open("Force-release this lock?", lines, releaseReq{seen: seen})
		return
	}
	lines = append(lines,
		"y tells the holder first: its lease ends at once (Execute's ctx, the bridge client's AbortSignal, "+
			"run's command), then it releases the key; nobody else can take it before that, or before its TTL "+
			"runs out if the holder never does.",
		"! frees it now: the holder may still be inside.",
		m.auditLine())
	m.dialog.OpenWithAlt("Force-release this lock?", lines, releaseReq{seen: seen},
		dialog.Alt{Key: "!", Label: "free now", Payload: releaseReq{seen: seen, mode: operator.FreeNow}})
}

// askReleaseAll opens the dialog for releasing every lock of the selected owner.
func (m *model) askReleaseAll() {
	owner, ok := m.selectedOwner()
	if !ok {
		m.noOwnerSelected()
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
		"Each key is deleted only while this owner still holds it (compare-and-unlink); the holder of a live " +
			"lease is told first and releases its key.",
		m.auditLine(),
	}
	m.dialog.Open(fmt.Sprintf("Release all %s of this owner?", plural(n, "lock", "locks")), lines,
		releaseAllReq{owner: owner, count: n})
}

// auditLine says in the dialog who the record names and where it goes.
func (m *model) auditLine() string {
	if m.cfg.Audit == nil {
		return "Not audited: no audit trail is configured."
	}
	if where := audit.Where(m.cfg.Audit); where != "" {
		return "Audited as " + m.cfg.Operator + " to " + where + "."
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
		m.setNotice(fmt.Sprintf("releasing %s…", printable(req.seen.Key)), false)
		return m.release(req)
	case releaseAllReq:
		if req.owner == "" { // unreachable through the keys (askReleaseAll refuses it)
			m.setNotice(emptyOwnerBulk, true)
			return nil
		}
		return tea.Batch(m.releaseAll(req), m.startTicking())
	}
	return nil
}

// releaser is the console's path to releasing a lock: the one the CLI takes too
// (audit.Releaser), auditing every release to cfg.Audit. The walk of a release of an owner's
// locks is paced by the console's own budget (Source.Pace), shared with the refreshes.
func (m *model) releaser() *audit.Releaser {
	return &audit.Releaser{Inspector: m.cfg.Inspector, Sink: m.cfg.Audit, Operator: m.cfg.Operator,
		Namespace: m.cfg.Namespace, Server: m.cfg.URL, Scan: operator.ScanOptions{Pace: m.src.Pace}}
}

// release force-releases one key if it is still the hold the dialog showed (the same owner and
// fencing token, or still no holder record), audits the result and re-reads the key so the
// table shows it at once.
func (m *model) release(req releaseReq) tea.Cmd {
	key := req.seen.Key
	return m.rt.mutation(func(ctx context.Context) tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, mutationTimeout)
		defer cancel()
		r := m.releaser().ForceReleaseHold(ctx, req.seen, req.mode)
		res := releaseDoneMsg{key: key, owner: req.seen.Owner, released: r.Count == 1, err: r.Err, auditErr: auditFailed(r),
			told: r.How == operator.HolderTold, toldAt: time.Now(), result: r}
		if res.told {
			if l, ok, err := m.cfg.Inspector.Get(ctx, key); err == nil && ok {
				res.ttl = l.TTL
			}
		}
		if r.Err == nil && r.Count == 0 {
			if l, ok, err := m.cfg.Inspector.Get(ctx, key); err == nil && ok && !l.Foreign {
				res.nowOwner, res.nowHeld = l.Owner, true
			}
		}
		m.reread(ctx, key)
		return res
	})
}

// releaseAll releases every lock of req.owner (compare-and-unlink per key) and audits it. Its
// walk of the namespace is paced by the budget, so on a large database it lasts longer than
// mutationTimeout: the console's life bounds it instead (quitting stops it, and the record and
// the notice say how many locks it released).
func (m *model) releaseAll(req releaseAllReq) tea.Cmd {
	bulk := &bulkRelease{owner: req.owner}
	m.bulk = bulk
	m.showBulkProgress()
	return m.rt.mutation(func(ctx context.Context) tea.Msg {
		releaser := m.releaser()
		releaser.OnReleased = func(operator.Lock, operator.Revocation) { bulk.released.Add(1) }
		r := releaser.ReleaseOwner(ctx, req.owner, operator.TellHolderFirst)
		return releaseAllDoneMsg{owner: req.owner, count: r.Count, err: r.Err, auditErr: auditFailed(r), bulk: bulk}
	})
}

// auditFailed is the failed audit write of r, for the screen (nil when it was written).
func auditFailed(r audit.Released) error {
	if r.AuditErr == nil {
		return nil
	}
	return fmt.Errorf("audit write failed: %w", r.AuditErr)
}

// reread reads key again and hands it to the hub, so a release shows without waiting for the
// next refresh.
func (m *model) reread(ctx context.Context, key string) {
	_, _ = m.src.ReadUnpacedInto(ctx, m.hub, []string{key}) // a failure leaves it to the next refresh
}

// awaitFreedReq follows a release that told the holder first.
type awaitFreedReq struct{ done releaseDoneMsg }

// awaitFreed waits until the key whose holder was told is freed (audit.Releaser.AwaitFreed), at
// most its TTL and a second, and reports when.
func (m *model) awaitFreed(req awaitFreedReq) tea.Cmd {
	d := req.done
	return m.rt.mutation(func(ctx context.Context) tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, d.ttl+time.Second)
		defer cancel()
		freed, r := m.releaser().AwaitFreed(ctx, d.key, d.result, d.toldAt)
		m.reread(ctx, d.key)
		return freedMsg{key: d.key, toldAt: d.toldAt, freedAt: freed, auditErr: auditFailed(r)}
	})
}

// onFreed says when a key whose holder was told was freed.
func (m *model) onFreed(msg freedMsg) {
	if msg.freedAt.IsZero() {
		m.setNotice(fmt.Sprintf("%s is still held: its holder was told at %s and did not release it", printable(msg.key), timeOfDay(msg.toldAt)), true)
	} else {
		m.setNotice(fmt.Sprintf("freed %s at %s, %s after its holder was told (%s)", printable(msg.key), timeOfDay(msg.freedAt),
			msg.freedAt.Sub(msg.toldAt).Round(time.Millisecond), timeOfDay(msg.toldAt)), false)
	}
	if msg.auditErr != nil {
		m.setStickyNotice("AUDIT FAILED for " + printable(msg.key) + ": " + msg.auditErr.Error() + " (" + m.notice.text + ")")
	}
}

// timeOfDay is a time of day with milliseconds, as notices show it.
func timeOfDay(t time.Time) string { return t.Format("15:04:05.000") }

func (m *model) onReleaseDone(msg releaseDoneMsg) {
	switch {
	case msg.err != nil:
		m.setNotice(fmt.Sprintf("release of %s failed: %v", printable(msg.key), msg.err), true)
	case msg.told:
		m.setNotice(fmt.Sprintf("told the holder of %s at %s; freed when it releases the key (at the latest in %s)",
			printable(msg.key), timeOfDay(msg.toldAt), msg.ttl.Round(time.Second)), false)
	case msg.released:
		m.setNotice(fmt.Sprintf("released %s (owner %s)", printable(msg.key), quote(msg.owner)), false)
	case msg.nowHeld && msg.nowOwner == msg.owner:
		m.setNotice(fmt.Sprintf("not released: %s changed since the dialog (owner %s): press d again", printable(msg.key), quote(msg.owner)), true)
	case msg.nowHeld:
		m.setNotice(fmt.Sprintf("not released: owner of %s changed to %s", printable(msg.key), quote(msg.nowOwner)), true)
	default:
		m.setNotice(fmt.Sprintf("not released: %s is already gone", printable(msg.key)), true)
	}
	if msg.auditErr != nil {
		m.setStickyNotice("AUDIT FAILED for " + printable(msg.key) + ": " + msg.auditErr.Error() + " (" + m.notice.text + ")")
	}
}

// bulkRelease is a release of an owner's locks under way; released is written by the release's
// goroutine and read by the model's.
type bulkRelease struct {
	owner    string
	released atomic.Int64
}

// showBulkProgress shows, while a release of an owner's locks walks the namespace, how many it
// released so far, on a notice that stays until the release ends (of two at once, the later
// one's). Another notice is left until it expires (a sticky one, such as a failed audit write,
// until the next notice).
func (m *model) showBulkProgress() {
	b := m.bulk
	if b == nil {
		return
	}
	cur := m.notice
	expired := !cur.until.IsZero() && !m.common.Now().Before(cur.until)
	if cur.text != "" && !cur.progress && !expired {
		return
	}
	text := fmt.Sprintf("releasing the locks of %s…", quote(b.owner))
	if n := int(b.released.Load()); n > 0 {
		text += fmt.Sprintf(" %s released so far", plural(n, "lock", "locks"))
	}
	m.notice = notice{text: text, progress: true}
}

func (m *model) onReleaseAllDone(msg releaseAllDoneMsg) {
	if m.bulk == msg.bulk {
		m.bulk = nil
	}
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

// noOwnerSelected says why there is no owner to act on: none under the cursor, or a process row,
// which may stand for several owner ids.
func (m *model) noOwnerSelected() {
	if m.active == pageOwners && m.owners.ByProcess() {
		m.setNotice("a process is not an owner id: "+m.common.Keys.Group.Help().Key+" groups the owners by owner id", true)
		return
	}
	m.setNotice("no owner selected", true)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
