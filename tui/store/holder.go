package store

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
)

// What the console says of a lock without holder record (stock Medusa writes none, nor did
// this project's clients before they kept one).
const (
	// NoRecord is the word for it in a table cell.
	NoRecord = "no record"
	// NoRecordGroup names the group of the locks without record (owners by process).
	NoRecordGroup = "no holder record"
	// NoRecordWhy is the same in a line, with the reason.
	NoRecordWhy = operator.NoHolderRecord
)

// GroupLocks is how many of a group's locks a View keeps, the oldest: what the owners view
// lists under its table.
const GroupLocks = 32

// HeldSince is when the current hold of e began: the holder record's acquired-at (Redis server
// time) when there is a record, exact true; else when this console first saw the owner holding
// it, a lower bound of the hold (exact false).
func (e *Entry) HeldSince() (since time.Time, exact bool) {
	if e.Record != nil && !e.Record.AcquiredAt.IsZero() {
		return e.Record.AcquiredAt, true
	}
	return e.FirstSeen, false
}

// HeldFor is how long e has been held at now (until it went, for a GONE lock), from HeldSince:
// exact false when it is only how long this console has seen it.
func (e *Entry) HeldFor(now time.Time) (held time.Duration, exact bool) {
	since, exact := e.HeldSince()
	end := now
	if !e.GoneAt.IsZero() {
		end = e.GoneAt
	}
	return max(end.Sub(since), 0), exact
}

// Group is a set of locks the owners view shows as one row (one owner id's, or one process's):
// how many, the oldest hold, and the oldest locks.
type Group struct {
	// Keys is the number of locks in the group among the filtered locks.
	Keys int
	// Oldest is when the group's oldest hold began (HeldSince), and OldestKey its key.
	Oldest    time.Time
	OldestKey string
	// LowerBound is true when a lock of the group has no holder record: its hold began at or
	// before Oldest's lock was first seen, so the oldest hold may be older than Oldest says.
	LowerBound bool
	// Locks are the group's oldest locks, oldest first: at most GroupLocks of them.
	Locks []*Entry
}

// add counts e in the group, keeping Locks sorted and bounded.
func (g *Group) add(e *Entry) {
	since, exact := e.HeldSince()
	g.Keys++
	g.LowerBound = g.LowerBound || !exact
	i, _ := slices.BinarySearchFunc(g.Locks, e, olderHold)
	if i >= GroupLocks {
		return
	}
	if len(g.Locks) == GroupLocks {
		g.Locks = g.Locks[:GroupLocks-1]
	}
	g.Locks = slices.Insert(g.Locks, i, e)
	if i == 0 {
		g.Oldest, g.OldestKey = since, e.Key
	}
}

// olderHold orders locks by the start of their hold, then by key.
func olderHold(a, b *Entry) int {
	sa, _ := a.HeldSince()
	sb, _ := b.HeldSince()
	if c := sa.Compare(sb); c != 0 {
		return c
	}
	return strings.Compare(a.Key, b.Key)
}

// Grouping is how the owners view groups the locks.
type Grouping int

// The groupings of the owners view.
const (
	// ByOwner groups the locks by owner id.
	ByOwner Grouping = iota
	// ByProcess groups them by the process in their holder record (host, pid, program and
	// client kind), the locks without record in one row.
	ByProcess
)

// Columns of the owners view grouped by process. Natural directions: most keys first, process
// and client kind A–Z, most owner ids first, oldest hold first.
const (
	ProcessByKeys = iota
	ProcessByProcess
	ProcessByClient
	ProcessByOwners
	ProcessByOldest
	processColumns
)

// ProcessColumns names the sortable columns of the owners view grouped by process.
var ProcessColumns = [processColumns]string{"KEYS", "PROCESS", "CLIENT", "OWNERS", "OLDEST"}

// ProcessRow is one line of the owners view grouped by process.
type ProcessRow struct {
	// Holder is the process (the zero Holder in the NoRecord row).
	Holder provider.Holder
	// NoRecord is true for the row of the locks without holder record.
	NoRecord bool
	// Owners is the number of owner ids among the group's locks.
	Owners int
	Group
}

// processAgg collects one process's locks while a View is built.
type processAgg struct {
	row    ProcessRow
	owners map[string]struct{}
}

// processes groups locks (live, not foreign, filtered) by the process of their record.
func processes(locks []*Entry) []ProcessRow {
	aggs := map[provider.Holder]*processAgg{}
	var none *processAgg
	for _, e := range locks {
		a := none
		if e.Record != nil {
			a = aggs[e.Record.Holder]
		}
		if a == nil {
			a = &processAgg{owners: map[string]struct{}{}}
			if e.Record != nil {
				a.row.Holder = e.Record.Holder
				aggs[e.Record.Holder] = a
			} else {
				a.row.NoRecord, none = true, a
			}
		}
		a.row.add(e)
		a.owners[e.Owner] = struct{}{}
	}
	out := make([]ProcessRow, 0, len(aggs)+1)
	for _, a := range aggs {
		a.row.Owners = len(a.owners)
		out = append(out, a.row)
	}
	if none != nil {
		none.row.Owners = len(none.owners)
		out = append(out, none.row)
	}
	return out
}

func processOrder(s Sort) func(a, b ProcessRow) int {
	return func(a, b ProcessRow) int {
		var c int
		switch s.Column {
		case ProcessByProcess:
		case ProcessByClient:
			c = strings.Compare(a.Holder.Client, b.Holder.Client)
		case ProcessByOwners:
			c = cmp.Compare(b.Owners, a.Owners)
		case ProcessByOldest:
			c = a.Oldest.Compare(b.Oldest)
		default:
			c = cmp.Compare(b.Keys, a.Keys)
		}
		if c == 0 {
			c = compareProcess(a, b)
		}
		if s.Reverse {
			return -c
		}
		return c
	}
}

// compareProcess orders processes by program, host and pid, the no-record row last.
func compareProcess(a, b ProcessRow) int { return compareHolders(a.holder(), b.holder()) }

// holder is the row's process, nil for the no-record row.
func (r *ProcessRow) holder() *provider.Holder {
	if r.NoRecord {
		return nil
	}
	return &r.Holder
}

// rankHolders sets the primary sort key of the live rows to their holder's rank in
// compareHolders order: a sort of 100,000 locks then compares integers, not the strings of a
// few hundred processes.
func rankHolders(rows []sortRow) {
	var holders []*provider.Holder
	seen := map[provider.Holder]bool{}
	for _, r := range rows {
		if h := holderOf(r.e); h != nil && !r.gone && !seen[*h] {
			seen[*h] = true
			holders = append(holders, h)
		}
	}
	slices.SortFunc(holders, compareHolders)
	rank := make(map[provider.Holder]int64, len(holders))
	for i, h := range holders {
		rank[*h] = int64(i)
	}
	for i := range rows {
		if rows[i].gone {
			continue // GONE rows keep their own order (primaryKey)
		}
		rows[i].primary = int64(len(holders)) // no record: last
		if h := holderOf(rows[i].e); h != nil {
			rows[i].primary = rank[*h]
		}
	}
}

// holderText is what a holder filter matches for a lock with record r: the process as the
// detail names it ("medusa-worker (pid 4242 on web-1, bridge client)"), NoRecordWhy without
// record.
func holderText(r *operator.Record) string {
	if r == nil {
		return NoRecordWhy
	}
	return r.Holder.String()
}

// holderOf is the process in e's holder record, nil when it has none.
func holderOf(e *Entry) *provider.Holder {
	if e.Record == nil {
		return nil
	}
	return &e.Record.Holder
}

// compareHolders orders holders by program, host, pid and client kind, none (nil) last.
func compareHolders(a, b *provider.Holder) int {
	if a == nil || b == nil {
		return cmp.Compare(boolInt(a == nil), boolInt(b == nil))
	}
	return cmp.Or(strings.Compare(a.Program, b.Program), strings.Compare(a.Host, b.Host),
		cmp.Compare(a.PID, b.PID), strings.Compare(a.Client, b.Client))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
