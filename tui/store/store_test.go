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

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func lock(key, owner string, ttl time.Duration) operator.Lock {
	return operator.Lock{Key: key, Owner: owner, TTL: ttl}
}

func TestCountdownBetweenObservations(t *testing.T) {
	s := store.New()
	s.Observe([]operator.Lock{lock("a", "o", 30*time.Second)}, t0, 1)
	e := s.Lock("a")
	require.NotNil(t, e)
	assert.Equal(t, 30*time.Second, e.TTL(t0))
	assert.Equal(t, 29500*time.Millisecond, e.TTL(t0.Add(500*time.Millisecond)))
	assert.Equal(t, time.Duration(0), e.TTL(t0.Add(time.Minute)), "a TTL never goes negative")
	assert.True(t, e.Counting(t0))
	assert.Equal(t, 10*time.Second, e.SeenFor(t0.Add(10*time.Second)))
}

func TestUnchangedObservationKeepsEntry(t *testing.T) {
	s := store.New()
	s.Observe([]operator.Lock{lock("a", "o", 30*time.Second)}, t0, 1)
	before := s.Lock("a")
	// One second later the TTL read is one second lower: the same deadline.
	s.Observe([]operator.Lock{lock("a", "o", 29*time.Second+50*time.Millisecond)}, t0.Add(time.Second), 2)
	assert.Same(t, before, s.Lock("a"), "an unchanged lock must not allocate a new entry")
}

var stateTests = []struct {
	name  string
	setup func(s *store.Store)
	at    time.Time
	want  store.State
}{
	{"held", func(s *store.Store) { s.Observe([]operator.Lock{lock("k", "o", 60*time.Second)}, t0, 1) }, t0.Add(10 * time.Second), store.StateHeld},
	{"expiring under 20% of lease", func(s *store.Store) { s.Observe([]operator.Lock{lock("k", "o", 100*time.Second)}, t0, 1) }, t0.Add(81 * time.Second), store.StateExpiring},
	{"not expiring at 21% of lease", func(s *store.Store) { s.Observe([]operator.Lock{lock("k", "o", 100*time.Second)}, t0, 1) }, t0.Add(79 * time.Second), store.StateHeld},
	{"expiring under 5s", func(s *store.Store) { s.Observe([]operator.Lock{lock("k", "o", 8*time.Second)}, t0, 1) }, t0.Add(4 * time.Second), store.StateExpiring},
	{"no ttl", func(s *store.Store) { s.Observe([]operator.Lock{lock("k", "o", provider.NoExpiry)}, t0, 1) }, t0.Add(time.Hour), store.StateNoTTL},
	{"foreign", func(s *store.Store) {
		s.Observe([]operator.Lock{{Key: "k", Foreign: true, TTL: provider.NoExpiry}}, t0, 1)
	}, t0, store.StateForeign},
	{"renewed when the TTL jumps up", func(s *store.Store) {
		s.Observe([]operator.Lock{lock("k", "o", 30*time.Second)}, t0, 1)
		s.Observe([]operator.Lock{lock("k", "o", 30*time.Second)}, t0.Add(10*time.Second), 2)
	}, t0.Add(11 * time.Second), store.StateRenewed},
	{"renewed ends after RenewedFor", func(s *store.Store) {
		s.Observe([]operator.Lock{lock("k", "o", 30*time.Second)}, t0, 1)
		s.Observe([]operator.Lock{lock("k", "o", 30*time.Second)}, t0.Add(10*time.Second), 2)
	}, t0.Add(10*time.Second + store.RenewedFor), store.StateHeld},
	{"renewed by event", func(s *store.Store) {
		s.Observe([]operator.Lock{lock("k", "o", 30*time.Second)}, t0, 1)
		s.Event(store.Event{Kind: provider.EventRenewed, Key: "k", Owner: "o", Time: t0.Add(time.Second)})
	}, t0.Add(2 * time.Second), store.StateRenewed},
	{"renewed event of another owner ignored", func(s *store.Store) {
		s.Observe([]operator.Lock{lock("k", "o", 30*time.Second)}, t0, 1)
		s.Event(store.Event{Kind: provider.EventRenewed, Key: "k", Owner: "x", Time: t0.Add(time.Second)})
	}, t0.Add(2 * time.Second), store.StateHeld},
	{"gone after a scan misses it", func(s *store.Store) {
		s.Observe([]operator.Lock{lock("k", "o", 30*time.Second)}, t0, 1)
		s.EndScan(2, t0.Add(time.Second), t0.Add(2*time.Second))
	}, t0.Add(3 * time.Second), store.StateGone},
	{"gone after a targeted read misses it", func(s *store.Store) {
		s.Observe([]operator.Lock{lock("k", "o", 30*time.Second)}, t0, 1)
		s.Absent([]string{"k"}, t0.Add(time.Second))
	}, t0.Add(2 * time.Second), store.StateGone},
	{"a scan that started before a targeted read does not mark it gone", func(s *store.Store) {
		s.Observe([]operator.Lock{lock("k", "o", 30*time.Second)}, t0.Add(2*time.Second), 0)
		s.EndScan(2, t0.Add(time.Second), t0.Add(3*time.Second))
	}, t0.Add(3 * time.Second), store.StateHeld},
	{"new owner after gone is held again", func(s *store.Store) {
		s.Observe([]operator.Lock{lock("k", "o", 30*time.Second)}, t0, 1)
		s.Absent([]string{"k"}, t0.Add(time.Second))
		s.Observe([]operator.Lock{lock("k", "p", 30*time.Second)}, t0.Add(2*time.Second), 0)
	}, t0.Add(3 * time.Second), store.StateHeld},
}

func TestStates(t *testing.T) {
	for _, tt := range stateTests {
		t.Run(tt.name, func(t *testing.T) {
			s := store.New()
			tt.setup(s)
			e := s.Lock("k")
			require.NotNil(t, e)
			if got := e.State(tt.at); got != tt.want {
				t.Errorf("State() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestGoneIsPrunedAfterGoneFor(t *testing.T) {
	s := store.New()
	s.Observe([]operator.Lock{lock("k", "o", 30*time.Second)}, t0, 1)
	s.Absent([]string{"k"}, t0)
	s.Prune(t0.Add(store.GoneFor - time.Millisecond))
	require.NotNil(t, s.Lock("k"), "GONE stays on screen for GoneFor")
	assert.True(t, s.Lock("k").Counting(t0), "a GONE row changes with time")
	s.Prune(t0.Add(store.GoneFor))
	assert.Nil(t, s.Lock("k"))
	assert.Equal(t, 0, s.Len())
}

func TestOwnerChangeStartsNewHolding(t *testing.T) {
	s := store.New()
	s.Observe([]operator.Lock{lock("k", "a", 60*time.Second)}, t0, 1)
	s.Observe([]operator.Lock{lock("k", "b", 10*time.Second)}, t0.Add(5*time.Second), 2)
	e := s.Lock("k")
	assert.Equal(t, "b", e.Owner)
	assert.Equal(t, t0.Add(5*time.Second), e.FirstSeen)
	assert.Equal(t, 10*time.Second, e.Lease, "the lease restarts with the new owner")
	v := s.Build(store.Query{Detail: "k"}, t0.Add(6*time.Second))
	require.NotNil(t, v.Detail)
	require.Len(t, v.Detail.History, 2)
	assert.Equal(t, "a", v.Detail.History[0].Owner)
	assert.Equal(t, t0.Add(5*time.Second), v.Detail.History[0].To)
	assert.Equal(t, "b", v.Detail.History[1].Owner)
	require.NotNil(t, v.Detail.Contention, "a hand-off counts as contention")
	assert.Equal(t, 1, v.Detail.Contention.Handoffs)
}

func TestContentionFromEvents(t *testing.T) {
	s := store.New()
	s.Observe([]operator.Lock{lock("cart:1", "holder", 60*time.Second)}, t0, 1)
	ev := func(kind provider.EventKind, owner string, at time.Duration) {
		s.Event(store.Event{Kind: kind, Key: "cart:1", Owner: owner, Time: t0.Add(at)})
	}
	ev(provider.EventWaiting, "w1", 0)
	ev(provider.EventWaiting, "w2", time.Second)
	ev(provider.EventWaiting, "w3", 2*time.Second)
	ev(provider.EventAcquired, "w1", 3*time.Second)
	ev(provider.EventGaveUp, "w2", 4*time.Second)

	v := s.Build(store.Query{}, t0.Add(5*time.Second))
	c := v.Contention["cart:1"]
	require.NotNil(t, c)
	assert.Equal(t, 1, c.Waiters, "w3 still waits")
	assert.InDelta(t, 0.2, c.AttemptsPerSec, 1e-9, "2 finished attempts over 10 s")
	assert.InDelta(t, 0.4, c.ContendedPerSec, 1e-9, "3 waiting + 1 gave up over 10 s")
	assert.Equal(t, 4, c.Contended)
	require.Len(t, c.History, store.HistorySeconds)
	assert.Equal(t, 1, c.History[store.HistorySeconds-1-4], "gave up at t0+4s, built at t0+5s")

	// A minute later the rates have decayed, the stale waiter is still counted until its timeout.
	v = s.Build(store.Query{}, t0.Add(61*time.Second))
	c = v.Contention["cart:1"]
	require.NotNil(t, c)
	assert.Equal(t, 1, c.Waiters)
	assert.Zero(t, c.ContendedPerSec)
	v = s.Build(store.Query{}, t0.Add(3*time.Minute))
	assert.Nil(t, v.Contention["cart:1"], "the waiter timed out and nothing else happened")
}

func TestHotRanking(t *testing.T) {
	s := store.New()
	for i, n := range []int{1, 5, 3} {
		key := fmt.Sprintf("k%d", i)
		for j := 0; j < n; j++ {
			s.Event(store.Event{Kind: provider.EventWaiting, Key: key, Owner: fmt.Sprint(j), Time: t0})
		}
	}
	s.Event(store.Event{Kind: provider.EventAcquired, Key: "calm", Owner: "x", Time: t0})
	v := s.Build(store.Query{}, t0.Add(time.Second))
	var keys []string
	for _, h := range v.Hot {
		keys = append(keys, h.Key)
	}
	assert.Equal(t, []string{"k1", "k2", "k0"}, keys, "ranked by contention; an uncontended key is not hot")
	v = s.Build(store.Query{HotSort: store.Sort{Column: store.HotByContended, Reverse: true}}, t0.Add(time.Second))
	assert.Equal(t, "k0", v.Hot[0].Key)
}

// The entry carries the lock's holder record; a re-entry by another process of the same owner
// (a new record) replaces the entry, the same record keeps it.
func TestHolderRecordFollowsTheLock(t *testing.T) {
	s := store.New()
	rec := func(pid int) *operator.Record {
		return &operator.Record{Holder: provider.Holder{Host: "h", PID: pid}, AcquiredAt: t0.Add(-time.Hour), FencingToken: 7}
	}
	l := lock("a", "o", 30*time.Second)
	l.Record = rec(1)
	s.Observe([]operator.Lock{l}, t0, 1)
	before := s.Lock("a")
	require.Equal(t, 1, before.Record.PID)
	l.Record, l.TTL = rec(1), 29*time.Second // read again one second later: an equal record
	s.Observe([]operator.Lock{l}, t0.Add(time.Second), 2)
	assert.Same(t, before, s.Lock("a"))
	l.Record, l.TTL = rec(2), 28*time.Second
	s.Observe([]operator.Lock{l}, t0.Add(2*time.Second), 3)
	assert.Equal(t, 2, s.Lock("a").Record.PID)
	assert.True(t, s.Lock("a").RenewedAt.IsZero(), "a new record alone is no renewal")
}

func TestExpiredHandsOutACountdownAtZeroOncePerRead(t *testing.T) {
	s := store.New()
	s.Observe([]operator.Lock{
		lock("short", "o", time.Second),
		lock("long", "o", time.Minute),
		lock("stuck", "o", provider.NoExpiry),
		{Key: "hash", Foreign: true, TTL: provider.NoExpiry},
	}, t0, 1)

	keys, next := s.Expired(t0.Add(500*time.Millisecond), 10)
	assert.Empty(t, keys, "nothing reached zero yet")
	assert.Equal(t, t0.Add(time.Second), next, "the earliest deadline ahead")

	at := t0.Add(2 * time.Second)
	keys, next = s.Expired(at, 10)
	assert.Equal(t, []string{"short"}, keys)
	assert.Equal(t, t0.Add(time.Minute), next)
	keys, _ = s.Expired(at.Add(time.Second), 10)
	assert.Empty(t, keys, "a key handed out is not handed out again before it is read")

	// Read again: still there with a new TTL, which then runs out too.
	s.Observe([]operator.Lock{lock("short", "o", time.Second)}, at.Add(time.Second), 0)
	assert.Equal(t, time.Second, s.Lock("short").TTL(at.Add(time.Second)), "the row shows its new TTL")
	keys, _ = s.Expired(at.Add(3*time.Second), 10)
	assert.Equal(t, []string{"short"}, keys, "read since: handed out again at its new deadline")

	s.Absent([]string{"short"}, at.Add(4*time.Second))
	keys, _ = s.Expired(at.Add(5*time.Second), 10)
	assert.Empty(t, keys, "a GONE row is not read again")
}

func TestExpiredStopsAtMax(t *testing.T) {
	s := store.New()
	s.Observe([]operator.Lock{lock("a", "o", time.Second), lock("b", "o", time.Second)}, t0, 1)
	at := t0.Add(time.Minute)
	first, next := s.Expired(at, 1)
	require.Len(t, first, 1)
	assert.Equal(t, at, next, "the rest is due at once")
	second, _ := s.Expired(at, 1)
	require.Len(t, second, 1)
	assert.NotEqual(t, first, second)
}
