package store

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/locktui/locktui/provider"
)

// Sort is the order of one table: a column index of that table and a direction. The zero Sort
// is each table's default order.
type Sort struct {
	Column  int
	Reverse bool
}

// Next returns the sort on the following column of a table with n columns, in that column's
// natural direction.
func (s Sort) Next(n int) Sort { return Sort{Column: (s.Column + 1) % max(n, 1)} }

// Columns of the locks table. Natural directions: state by attention (NO TTL and EXPIRING
// first), key and owner A–Z, holder by program, host and pid (no record last), TTL soonest first, held longest first (Entry.HeldSince), most
// waiters first, most contended first. Whatever the order, GONE rows come after the live ones.
const (
	LockByState = iota
	LockByKey
	LockByOwner
	LockByHolder
	LockByTTL
	LockByHeld
	LockByWaiters
	LockByContended
	lockColumns
)

// Columns of the owners table. Natural directions: most keys first, owner and kind A–Z,
// oldest hold first (Entry.HeldSince).
const (
	OwnerByKeys = iota
	OwnerByOwner
	OwnerByKind
	OwnerByOldest
	ownerColumns
)

// Columns of the hot-locks ranking. Natural direction: highest first.
const (
	HotByContended = iota
	HotByWaiters
	HotByAttempts
	HotByKey
	hotColumns
)

// LockColumns, OwnerColumns and HotColumns name the sortable columns of each table.
var (
	LockColumns  = [lockColumns]string{"STATE", "KEY", "OWNER", "HOLDER", "TTL", "HELD", "WAIT", "CONT/s"}
	OwnerColumns = [ownerColumns]string{"KEYS", "OWNER", "KIND", "OLDEST"}
	HotColumns   = [hotColumns]string{"CONTENDED", "WAITERS", "ATTEMPTS", "KEY"}
)

// Query says what a View holds: the filter, the order of each table, the grouping of the
// owners view and the key of the detail view.
type Query struct {
	Filter      string
	LockSort    Sort
	OwnerSort   Sort
	ProcessSort Sort
	HotSort     Sort
	// Grouping is how the owners view groups the locks: by owner id (Owners) or by process
	// (Processes, built only then).
	Grouping Grouping
	// Detail is the key shown in the detail view ("" for none).
	Detail string
}

// OwnerRow is one line of the owners view grouped by owner id.
type OwnerRow struct {
	Owner string
	// Kind is "execute", "named" or "anonymous" (see Kind).
	Kind string
	// Group is the owner's locks among the filtered locks.
	Group
}

// HotRow is one line of the hot-locks ranking.
type HotRow struct {
	Key string
	// Entry is the lock now (nil when the key is not held).
	Entry      *Entry
	Contention *Contention
}

// Detail is the detail view of one key.
type Detail struct {
	Key string
	// Entry is the lock now (nil when the key is not held).
	Entry *Entry
	// History lists the owners seen holding the key, oldest first.
	History    []OwnerSpan
	Contention *Contention
}

// View is everything the screens show, built at one instant. It is immutable.
type View struct {
	Query Query
	At    time.Time
	// Scanned is true when the View holds the result of a complete full scan (the first
	// refresh has ended): the locks view keeps its cursor on the top row until then.
	Scanned bool
	// Total is the number of locks held in the namespace (GONE ones excluded).
	Total int
	// Matched is the number of locks held that pass the filter (Total when there is none).
	Matched int
	// Locks are the filtered locks in the order of Query.LockSort, live ones first, then the
	// GONE ones (newest first).
	Locks []*Entry
	// Contention holds the contention of every key that had some lately.
	Contention map[string]*Contention
	// Owners are the owners of the filtered locks in the order of Query.OwnerSort.
	Owners []OwnerRow
	// Processes are the processes holding the filtered locks, in the order of
	// Query.ProcessSort; built only when Query.Grouping is ByProcess (nil otherwise).
	Processes []ProcessRow
	// OwnerKeys counts the locks of every owner, unfiltered: what a release-all would take.
	OwnerKeys map[string]int
	// Hot ranks the filtered keys that saw contention, in the order of Query.HotSort.
	Hot []HotRow
	// Detail is the detail of Query.Detail (nil when none is asked).
	Detail *Detail
	// Took is how long the build took.
	Took time.Duration
}

// Index returns the position of key in Locks, or -1.
func (v *View) Index(key string) int {
	if v == nil {
		return -1
	}
	for i, e := range v.Locks {
		if e.Key == key {
			return i
		}
	}
	return -1
}

// sortRow carries the precomputed sort keys of one lock: live before GONE, then primary,
// then owner (when sorting by owner), then key.
type sortRow struct {
	e       *Entry
	gone    bool
	primary int64
}

// ownerAgg counts one owner's locks while a View is built.
type ownerAgg struct {
	row   OwnerRow
	total int // all the owner's locks, unfiltered
}

// Build filters and sorts the store for q at now. It is the expensive call (O(n log n) in
// the number of locks) and runs off the UI goroutine.
func (s *Store) Build(q Query, now time.Time) *View {
	start := time.Now()
	f := ParseFilter(q.Filter)
	v := &View{Query: q, At: now, Scanned: s.scanned, Contention: map[string]*Contention{}}
	for key, ks := range s.tracker.keys {
		if c := ks.snapshot(now); c != nil {
			v.Contention[key] = c
		}
	}
	rows := make([]sortRow, 0, len(s.recs))
	owners := map[string]*ownerAgg{}
	var held []*Entry // the filtered live locks, for the grouping by process
	col := q.LockSort.Column
	for i := range s.recs {
		e := s.recs[i].entry
		gone := !e.GoneAt.IsZero()
		if !gone {
			v.Total++
		}
		match := f.Match(e)
		if !gone && !e.Foreign {
			o := owners[e.Owner]
			if o == nil {
				o = &ownerAgg{row: OwnerRow{Owner: e.Owner, Kind: Kind(e.Owner)}}
				owners[e.Owner] = o
			}
			o.total++
			if match {
				o.row.add(e)
				if q.Grouping == ByProcess {
					held = append(held, e)
				}
			}
		}
		if match {
			if !gone {
				v.Matched++
			}
			rows = append(rows, sortRow{e: e, gone: gone, primary: primaryKey(col, e, now, v.Contention)})
		}
	}
	if col == LockByHolder {
		rankHolders(rows)
	}
	slices.SortFunc(rows, lockOrder(q.LockSort))
	v.Locks = make([]*Entry, len(rows))
	for i := range rows {
		v.Locks[i] = rows[i].e
	}
	v.OwnerKeys = make(map[string]int, len(owners))
	v.Owners = make([]OwnerRow, 0, len(owners))
	for owner, o := range owners {
		v.OwnerKeys[owner] = o.total
		if o.row.Keys > 0 && f.MatchOwner(owner) {
			v.Owners = append(v.Owners, o.row)
		}
	}
	slices.SortFunc(v.Owners, ownerOrder(q.OwnerSort))
	if q.Grouping == ByProcess {
		v.Processes = processes(held)
		slices.SortFunc(v.Processes, processOrder(q.ProcessSort))
	}
	v.Hot = s.hot(f, v.Contention)
	slices.SortFunc(v.Hot, hotOrder(q.HotSort))
	if q.Detail != "" {
		v.Detail = s.detail(q.Detail, v.Contention[q.Detail])
	}
	v.Took = time.Since(start)
	return v
}

// primaryKey is the first sort key of e for column col, in ascending natural order.
func primaryKey(col int, e *Entry, now time.Time, cont map[string]*Contention) int64 {
	c := cont[e.Key]
	contention := func() int64 {
		if c == nil {
			return 0
		}
		// Higher contention first: negate; contended/s in milli-units, then waiters.
		return -(int64(c.ContendedPerSec*1000)<<16 + int64(min(c.Waiters, 1<<16-1)))
	}
	if !e.GoneAt.IsZero() {
		return -e.GoneAt.UnixNano() // GONE rows sort apart, after the live ones: newest first
	}
	switch col {
	case LockByTTL:
		if e.TTL(now) == provider.NoExpiry {
			return math.MaxInt64
		}
		return e.Deadline.UnixNano()
	case LockByHeld:
		since, _ := e.HeldSince()
		return since.UnixNano()
	case LockByWaiters:
		if c == nil {
			return 0
		}
		return -(int64(min(c.Waiters, 1<<20))<<40 + int64(c.ContendedPerSec*1000))
	case LockByContended:
		return contention()
	case LockByKey, LockByOwner, LockByHolder:
		return 0
	default:
		// State in the top bits, contention below: NO TTL, EXPIRING… first, busiest first.
		return int64(e.State(now))<<56 + contention()>>8
	}
}

func (s *Store) hot(f Filter, cont map[string]*Contention) []HotRow {
	var out []HotRow
	for key, c := range cont {
		if c.Contended == 0 && c.Waiters == 0 {
			continue
		}
		row := HotRow{Key: key, Contention: c}
		if rec := s.get(key); rec != nil && rec.entry.GoneAt.IsZero() {
			row.Entry = rec.entry
		}
		owner := ""
		if row.Entry != nil {
			owner = row.Entry.Owner
		}
		if !f.MatchKey(key) || !f.MatchOwner(owner) {
			continue
		}
		out = append(out, row)
	}
	return out
}

func (s *Store) detail(key string, c *Contention) *Detail {
	d := &Detail{Key: key, Contention: c}
	if rec := s.get(key); rec != nil {
		d.Entry = rec.entry
		d.History = slices.Clone(rec.history)
	}
	return d
}

func lockOrder(s Sort) func(a, b sortRow) int {
	byOwner := s.Column == LockByOwner
	return func(a, b sortRow) int {
		if a.gone != b.gone {
			if a.gone {
				return 1 // GONE after live, in either direction
			}
			return -1
		}
		c := cmp.Compare(a.primary, b.primary)
		if c == 0 && byOwner {
			c = strings.Compare(a.e.Owner, b.e.Owner)
		}
		if c == 0 {
			c = strings.Compare(a.e.Key, b.e.Key)
		}
		if s.Reverse {
			return -c
		}
		return c
	}
}

func ownerOrder(s Sort) func(a, b OwnerRow) int {
	return func(a, b OwnerRow) int {
		var c int
		switch s.Column {
		case OwnerByOwner:
		case OwnerByKind:
			c = strings.Compare(a.Kind, b.Kind)
		case OwnerByOldest:
			c = a.Oldest.Compare(b.Oldest)
		default:
			c = cmp.Compare(b.Keys, a.Keys)
		}
		if c == 0 {
			c = strings.Compare(a.Owner, b.Owner)
		}
		if s.Reverse {
			return -c
		}
		return c
	}
}

func hotOrder(s Sort) func(a, b HotRow) int {
	return func(a, b HotRow) int {
		var c int
		switch s.Column {
		case HotByWaiters:
			c = cmp.Compare(b.Contention.Waiters, a.Contention.Waiters)
		case HotByAttempts:
			c = cmp.Compare(b.Contention.AttemptsPerSec, a.Contention.AttemptsPerSec)
		case HotByKey:
		default:
			c = cmp.Compare(b.Contention.Score(), a.Contention.Score())
			if c == 0 {
				c = cmp.Compare(b.Contention.Waiters, a.Contention.Waiters)
			}
		}
		if c == 0 {
			c = strings.Compare(a.Key, b.Key)
		}
		if s.Reverse {
			return -c
		}
		return c
	}
}
