package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
	"github.com/locktui/locktui/tui/store"
)

var (
	worker = provider.Holder{Host: "web-1", PID: 4242, Program: "medusa-worker", Client: provider.ClientBridge}
	cron   = provider.Holder{Host: "web-2", PID: 7, Program: "cron", Client: provider.ClientGo}
)

// recorded is a lock with a holder record whose hold began at since.
func recorded(key, owner string, h provider.Holder, since time.Time) operator.Lock {
	l := lock(key, owner, time.Minute)
	l.Record = &operator.Record{Holder: h, AcquiredAt: since, FencingToken: 1}
	return l
}

func TestHeldForIsTheRecordsHoldElseALowerBound(t *testing.T) {
	s := store.New()
	s.Observe([]operator.Lock{recorded("rec", "o", worker, t0.Add(-3*time.Hour)), lock("stock", "o", time.Minute)}, t0, 1)
	now := t0.Add(time.Minute)

	held, exact := s.Lock("rec").HeldFor(now)
	assert.True(t, exact)
	assert.Equal(t, 3*time.Hour+time.Minute, held, "from the record's acquired-at, not from when the console saw it")
	held, exact = s.Lock("stock").HeldFor(now)
	assert.False(t, exact, "no record: only how long the console saw it")
	assert.Equal(t, time.Minute, held)

	s.Absent([]string{"rec"}, t0.Add(10*time.Second))
	held, _ = s.Lock("rec").HeldFor(now.Add(time.Hour))
	assert.Equal(t, 3*time.Hour+10*time.Second, held, "a GONE lock's hold stops when it went")
}

func TestSortByHeldPutsTheLongestHoldFirst(t *testing.T) {
	s := store.New()
	s.Observe([]operator.Lock{lock("a-seen-first", "o", time.Minute)}, t0, 1)
	s.Observe([]operator.Lock{recorded("b-held-for-hours", "o", worker, t0.Add(-2*time.Hour)),
		lock("c-seen-later", "o", time.Minute)}, t0.Add(time.Second), 0)
	v := s.Build(store.Query{LockSort: store.Sort{Column: store.LockByHeld}}, t0.Add(2*time.Second))
	assert.Equal(t, []string{"b-held-for-hours", "a-seen-first", "c-seen-later"}, keysOf(v))
}

func TestOwnersOldestIsTheTrueHoldWhereRecorded(t *testing.T) {
	s := store.New()
	s.Observe([]operator.Lock{lock("seen", "svc", time.Minute),
		recorded("recorded", "svc", worker, t0.Add(-time.Hour)), recorded("alone", "other", worker, t0)}, t0, 1)
	v := s.Build(store.Query{}, t0)
	require.Len(t, v.Owners, 2)
	o := v.Owners[0]
	assert.Equal(t, "svc", o.Owner)
	assert.Equal(t, "recorded", o.OldestKey)
	assert.Equal(t, t0.Add(-time.Hour), o.Oldest)
	assert.True(t, o.LowerBound, "a lock without record may be older")
	assert.Equal(t, []string{"recorded", "seen"}, entryKeys(o.Locks), "oldest first")
	assert.False(t, v.Owners[1].LowerBound, "every lock of other has a record")
	assert.Nil(t, v.Processes, "built only for the grouping by process")
}

func TestProcessesGroupByHolderAndTheLocksWithoutRecordInOneRow(t *testing.T) {
	s := store.New()
	s.Observe([]operator.Lock{
		recorded("w1", "execute:1", worker, t0.Add(-time.Hour)),
		recorded("w2", "execute:2", worker, t0.Add(-time.Minute)),
		recorded("w3", "execute:2", worker, t0.Add(-time.Second)),
		recorded("c1", "cron-owner", cron, t0.Add(-2*time.Hour)),
		lock("stock1", "execute:9", time.Minute),
		lock("stock2", "*", time.Minute),
		{Key: "list", Foreign: true, TTL: provider.NoExpiry},
	}, t0, 1)
	s.Observe([]operator.Lock{lock("gone", "o", time.Minute)}, t0, 0)
	s.Absent([]string{"gone"}, t0)

	v := s.Build(store.Query{Grouping: store.ByProcess}, t0)
	require.Len(t, v.Processes, 3, "two processes and the locks without record; no foreign key, no GONE lock")
	w := v.Processes[0]
	assert.Equal(t, worker, w.Holder)
	assert.Equal(t, 3, w.Keys)
	assert.Equal(t, 2, w.Owners)
	assert.Equal(t, "w1", w.OldestKey)
	assert.False(t, w.LowerBound)
	none := v.Processes[1]
	assert.True(t, none.NoRecord, "the no-record row sorts after a process with as many keys")
	assert.Equal(t, 2, none.Keys)
	assert.Equal(t, 2, none.Owners)
	assert.True(t, none.LowerBound)
	assert.Equal(t, cron, v.Processes[2].Holder)

	v = s.Build(store.Query{Grouping: store.ByProcess, ProcessSort: store.Sort{Column: store.ProcessByOldest}}, t0)
	assert.Equal(t, cron, v.Processes[0].Holder, "oldest hold first")
	v = s.Build(store.Query{Grouping: store.ByProcess, ProcessSort: store.Sort{Column: store.ProcessByProcess}}, t0)
	assert.Equal(t, []provider.Holder{cron, worker, {}}, holders(v.Processes), "by program, no record last")
	v = s.Build(store.Query{Grouping: store.ByProcess, Filter: "w*"}, t0)
	require.Len(t, v.Processes, 1, "the filter applies")
	assert.Equal(t, 3, v.Processes[0].Keys)
}

func TestGroupKeepsItsOldestLocksOnly(t *testing.T) {
	s := store.New()
	var locks []operator.Lock
	n := store.GroupLocks + 10
	for i := range n {
		// Newest first, so that every insertion lands in front.
		locks = append(locks, recorded(fmt.Sprintf("k%03d", i), "o", worker, t0.Add(-time.Duration(i)*time.Second)))
	}
	s.Observe(locks, t0, 1)
	v := s.Build(store.Query{Grouping: store.ByProcess}, t0)
	for _, g := range []store.Group{v.Owners[0].Group, v.Processes[0].Group} {
		assert.Equal(t, n, g.Keys)
		require.Len(t, g.Locks, store.GroupLocks)
		assert.Equal(t, fmt.Sprintf("k%03d", n-1), g.Locks[0].Key)
		assert.Equal(t, fmt.Sprintf("k%03d", n-store.GroupLocks), g.Locks[store.GroupLocks-1].Key)
		assert.Equal(t, g.Locks[0].Key, g.OldestKey)
	}
}

func entryKeys(es []*store.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Key
	}
	return out
}

func holders(rows []store.ProcessRow) []provider.Holder {
	out := make([]provider.Holder, len(rows))
	for i, r := range rows {
		out[i] = r.Holder
	}
	return out
}

func TestSortByHolderNamesTheProcessAndPutsNoRecordLast(t *testing.T) {
	s := store.New()
	s.Observe([]operator.Lock{lock("a-stock", "o", time.Minute), recorded("b-worker", "o", worker, t0),
		recorded("c-cron", "o", cron, t0)}, t0, 1)
	v := s.Build(store.Query{LockSort: store.Sort{Column: store.LockByHolder}}, t0)
	assert.Equal(t, []string{"c-cron", "b-worker", "a-stock"}, keysOf(v))
}

// A holder filter selects locks by the process in their record (program, pid, host, client
// kind, as the detail names it); "holder:stock" the locks without record. It keeps every
// owner and key of the locks it selects, and a renewal that brings another record re-matches.
func TestHolderFilterSelectsByTheHoldingProcess(t *testing.T) {
	s := store.New()
	s.Observe([]operator.Lock{
		recorded("cart:1", "execute:1", worker, t0), recorded("cart:2", "execute:2", cron, t0),
		lock("stock:1", "svc", time.Minute), {Key: "stats", Foreign: true, TTL: provider.NoExpiry},
	}, t0, 1)
	for filter, want := range map[string][]string{
		"holder:web-1":            {"cart:1"},
		"HOLDER: medusa-*":        {"cart:1"},
		"holder:pid 7 ":           {"cart:2"},
		"holder:go client":        {"cart:2"},
		"holder:web-":             {"cart:1", "cart:2"},
		"holder:stock":            {"stock:1"},
		"holder:no holder":        {"stock:1"},
		"holder:nothing here":     nil,
		"holder:=cart:1":          nil, // not a key: holder filters never read a key
		"holder:" + cron.Host:     {"cart:2"},
		"holder:" + cron.String(): {"cart:2"},
	} {
		v := s.Build(store.Query{Filter: filter, LockSort: store.Sort{Column: store.LockByKey}}, t0)
		assert.ElementsMatch(t, want, keysOf(v), "filter %q", filter)
		_, exact := store.ExactKey(filter)
		assert.False(t, exact, "filter %q reads no key", filter)
	}
	v := s.Build(store.Query{Filter: "holder:web-1"}, t0)
	require.Len(t, v.Owners, 1)
	assert.Equal(t, "execute:1", v.Owners[0].Owner)

	l := recorded("cart:2", "execute:2", worker, t0) // the same hold, now recorded for worker
	s.Observe([]operator.Lock{l}, t0.Add(time.Second), 2)
	v = s.Build(store.Query{Filter: "holder:web-1", LockSort: store.Sort{Column: store.LockByKey}}, t0.Add(time.Second))
	assert.ElementsMatch(t, []string{"cart:1", "cart:2"}, keysOf(v))
}
