package store

import (
	"time"

	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
)

// maxHistory bounds the owners remembered per key for the detail view.
const maxHistory = 16

// OwnerSpan is one owner's holding of a key, as the console saw it.
type OwnerSpan struct {
	Owner string
	// Foreign is true for a span in which the key was of another type, not a lock (Owner "").
	Foreign bool
	From    time.Time
	// To is when the holding ended (zero while it lasts).
	To time.Time
}

// record is the store's mutable bookkeeping of one key; entry is the published, immutable part.
type record struct {
	entry    *Entry
	scan     uint64    // the last full scan that saw the key
	observed time.Time // the last time the key was read
	// asked is when Expired last handed the key out to be read again (zero: never).
	asked   time.Time
	history []OwnerSpan
}

// Store holds every lock of the namespace as last observed, with the contention of each key.
// It is not safe for concurrent use: one goroutine owns it (see package source) and hands out
// Views, which are immutable.
type Store struct {
	// recs are dense, so Build walks memory in order; index maps a key to its record.
	recs    []record
	index   map[string]int
	gone    map[string]struct{} // keys currently GONE, pruned after GoneFor
	tracker tracker
	// scanned is true once a full scan has ended (EndScan): the store holds every lock it saw.
	scanned bool
}

// New returns an empty store.
func New() *Store {
	return &Store{index: map[string]int{}, gone: map[string]struct{}{}}
}

// Len returns the number of keys known, GONE ones included.
func (s *Store) Len() int { return len(s.recs) }

// get returns the record of key, or nil; the pointer is valid until the next add or remove.
func (s *Store) get(key string) *record {
	if i, ok := s.index[key]; ok {
		return &s.recs[i]
	}
	return nil
}

func (s *Store) add(r record) {
	s.index[r.entry.Key] = len(s.recs)
	s.recs = append(s.recs, r)
}

// remove deletes key's record, moving the last record into its place.
func (s *Store) remove(key string) {
	i, ok := s.index[key]
	if !ok {
		return
	}
	last := len(s.recs) - 1
	if i != last {
		s.recs[i] = s.recs[last]
		s.index[s.recs[i].entry.Key] = i
	}
	s.recs[last] = record{}
	s.recs = s.recs[:last]
	delete(s.index, key)
}

// Observe records locks read at `at`. scan is the id of the full scan the batch belongs to
// (0 for a targeted read: keyspace notification or sampling). A lock whose owner changed starts
// a new holding (and counts as a hand-off); a deadline that moved later marks it RENEWED.
func (s *Store) Observe(locks []operator.Lock, at time.Time, scan uint64) {
	for i := range locks {
		s.observe(&locks[i], at, scan)
	}
}

func (s *Store) observe(l *operator.Lock, at time.Time, scan uint64) {
	rec := s.get(l.Key)
	var deadline time.Time
	noTTL := l.TTL < 0 && !l.Foreign
	if l.TTL >= 0 {
		deadline = at.Add(l.TTL)
	}
	ttl := max(l.TTL, 0)
	if rec == nil {
		e := newEntry(l.Key, l.Owner)
		e.Deadline, e.NoTTL, e.Foreign, e.Lease, e.FirstSeen = deadline, noTTL, l.Foreign, ttl, at
		e.setRecord(l.Record)
		s.add(record{entry: e, scan: scan, observed: at, history: []OwnerSpan{{Owner: l.Owner, Foreign: l.Foreign, From: at}}})
		return
	}
	if at.Before(rec.observed) {
		return // an older read than one already applied
	}
	if scan != 0 {
		rec.scan = scan
	}
	rec.observed = at
	old := rec.entry
	gone := !old.GoneAt.IsZero()
	if gone || old.Owner != l.Owner || old.Foreign != l.Foreign {
		if !old.Foreign && !l.Foreign && old.Owner != l.Owner && (!gone || at.Sub(old.GoneAt) < GoneFor) {
			s.tracker.handoff(l.Key, at)
		}
		e := newEntry(l.Key, l.Owner)
		e.Deadline, e.NoTTL, e.Foreign, e.Lease, e.FirstSeen = deadline, noTTL, l.Foreign, ttl, at
		e.setRecord(l.Record)
		rec.entry = e
		rec.closeSpan(at)
		rec.history = append(rec.history, OwnerSpan{Owner: l.Owner, Foreign: l.Foreign, From: at})
		if len(rec.history) > maxHistory {
			rec.history = rec.history[len(rec.history)-maxHistory:]
		}
		delete(s.gone, l.Key)
		return
	}
	sameRecord := sameHolder(old.Record, l.Record)
	if sameRecord && old.NoTTL == noTTL && (noTTL || absDuration(deadline.Sub(old.Deadline)) <= renewTolerance) {
		return // unchanged: keep the published entry
	}
	e := *old
	e.Deadline, e.NoTTL = deadline, noTTL
	e.setRecord(l.Record)
	e.Lease = max(old.Lease, ttl)
	if noTTL != old.NoTTL || deadline.After(old.Deadline.Add(renewTolerance)) {
		e.RenewedAt = at
	}
	rec.entry = &e
}

// sameHolder tells whether two reads of a lock's holder record show the same hold by the same
// process (a re-entry by another process of the same owner changes it).
func sameHolder(a, b *operator.Record) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Holder == b.Holder && a.FencingToken == b.FencingToken && a.AcquiredAt.Equal(b.AcquiredAt)
}

// EndScan marks GONE every lock that the full scan `scan`, started at `started`, did not see,
// unless a targeted read saw it after the scan began.
func (s *Store) EndScan(scan uint64, started, now time.Time) {
	s.scanned = true
	for i := range s.recs {
		rec := &s.recs[i]
		if rec.scan != scan && rec.observed.Before(started) && rec.entry.GoneAt.IsZero() {
			s.markGone(rec, now)
		}
	}
}

// Absent marks GONE the keys a targeted read found missing at `at`.
func (s *Store) Absent(keys []string, at time.Time) {
	for _, key := range keys {
		rec := s.get(key)
		if rec == nil || rec.entry.GoneAt.IsZero() && at.Before(rec.observed) {
			continue
		}
		rec.observed = at
		if rec.entry.GoneAt.IsZero() {
			s.markGone(rec, at)
		}
	}
}

func (s *Store) markGone(rec *record, at time.Time) {
	e := *rec.entry
	e.GoneAt = at
	rec.entry = &e
	rec.closeSpan(at)
	s.gone[e.Key] = struct{}{}
}

func (r *record) closeSpan(at time.Time) {
	if n := len(r.history); n > 0 && r.history[n-1].To.IsZero() {
		r.history[n-1].To = at
	}
}

// Event records a lock event: contention for waiting, acquired, gave_up and lost; a "renewed"
// event marks the owner's lock RENEWED.
func (s *Store) Event(e Event) {
	s.tracker.event(e)
	if e.Kind != provider.EventRenewed {
		return
	}
	rec := s.get(e.Key)
	if rec == nil || rec.entry.Owner != e.Owner || !rec.entry.GoneAt.IsZero() {
		return
	}
	en := *rec.entry
	en.RenewedAt = e.Time
	rec.entry = &en
}

// Expired returns up to max keys whose countdown reached zero at now without news (a lock
// or foreign key with a deadline, not GONE, not handed out since it was last read): an expiry
// whose notification was lost would otherwise leave the row at 0 until the next full
// refresh, so the caller reads these keys again. next is the earliest deadline still ahead
// (zero when none): nothing new expires before it unless the store changes.
func (s *Store) Expired(now time.Time, max int) (keys []string, next time.Time) {
	for i := range s.recs {
		rec := &s.recs[i]
		e := rec.entry
		if !e.GoneAt.IsZero() || e.NoTTL || e.Deadline.IsZero() {
			continue
		}
		if now.Before(e.Deadline) {
			if next.IsZero() || e.Deadline.Before(next) {
				next = e.Deadline
			}
			continue
		}
		if !rec.asked.IsZero() && !rec.asked.Before(rec.observed) {
			continue // handed out already, and not read since
		}
		if len(keys) == max {
			// Left for the next call: it is due at once.
			next = now
			continue
		}
		rec.asked = now
		keys = append(keys, e.Key)
	}
	return keys, next
}

// Prune forgets locks GONE for longer than GoneFor and contention older than the history.
func (s *Store) Prune(now time.Time) {
	for key := range s.gone {
		rec := s.get(key)
		if rec == nil || rec.entry.GoneAt.IsZero() {
			delete(s.gone, key)
			continue
		}
		if now.Sub(rec.entry.GoneAt) >= GoneFor {
			s.remove(key)
			delete(s.gone, key)
		}
	}
	s.tracker.prune(now)
}

// Lock returns the current entry of key (nil when unknown).
func (s *Store) Lock(key string) *Entry {
	if rec := s.get(key); rec != nil {
		return rec.entry
	}
	return nil
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
