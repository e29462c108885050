package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
	"github.com/locktui/locktui/tui/store"
)

var filterTests = []struct {
	filter string
	want   []string
}{
	{"", []string{"cart:1", "cart:2", "Order:10", "order:2", "stuck"}},
	{"cart", []string{"cart:1", "cart:2"}},
	{"ORDER", []string{"Order:10", "order:2"}},
	{"order:?", []string{"order:2"}},
	{"order:*", []string{"Order:10", "order:2"}},
	{"*:[12]", []string{"cart:1", "cart:2", "order:2"}},
	{"*:[^1]", []string{"cart:2", "order:2"}},
	{"c*1", []string{"cart:1"}},
	{"owner:execute:", []string{"cart:1", "cart:2"}},
	{"owner:*", []string{"cart:1", "cart:2", "Order:10", "order:2", "stuck"}},
	{`owner:\*`, []string{"stuck"}},
	{"owner:=*", []string{"stuck"}},
	{"owner:=svc", nil},
	{"=order:2", []string{"order:2"}},
	{"OWNER: svc-*", []string{"Order:10", "order:2"}},
	{"nothing", nil},
}

func filterStore() *store.Store {
	s := store.New()
	s.Observe([]operator.Lock{
		lock("cart:1", "execute:1111", 30*time.Second),
		lock("cart:2", "execute:2222", 40*time.Second),
		lock("Order:10", "svc-a", 50*time.Second),
		lock("order:2", "svc-b", 60*time.Second),
		lock("stuck", "*", provider.NoExpiry),
	}, t0, 1)
	return s
}

func TestFilter(t *testing.T) {
	s := filterStore()
	for _, tt := range filterTests {
		t.Run(tt.filter, func(t *testing.T) {
			v := s.Build(store.Query{Filter: tt.filter, LockSort: store.Sort{Column: store.LockByKey}}, t0)
			var got []string
			for _, e := range v.Locks {
				got = append(got, e.Key)
			}
			// Key order is byte order: upper case first.
			assert.ElementsMatch(t, tt.want, got, "filter %q", tt.filter)
			assert.Equal(t, 5, v.Total, "Total counts the unfiltered locks")
		})
	}
}

func TestGlobSyntax(t *testing.T) {
	cases := []struct {
		pattern, s string
		want       bool
	}{
		{"a*", "abc", true}, {"*c", "abc", true}, {"a?c", "abc", true}, {"a?c", "ac", false},
		{"[a-c]x", "bx", true}, {"[a-c]x", "dx", false}, {"[^a]x", "ax", false}, {`a\*`, "a*", true},
		{`a\*`, "ab", false}, {"a[", "a[", true}, {"*:*:*", "a:b:c", true}, {"a**b", "ab", true},
	}
	for _, c := range cases {
		f := store.ParseFilter(c.pattern)
		if got := f.MatchKey(c.s); got != c.want {
			t.Errorf("glob %q on %q = %v, want %v", c.pattern, c.s, got, c.want)
		}
	}
}

func keysOf(v *store.View) []string {
	var out []string
	for _, e := range v.Locks {
		out = append(out, e.Key)
	}
	return out
}

func TestLockSort(t *testing.T) {
	s := store.New()
	s.Observe([]operator.Lock{
		lock("b-held", "o2", 60*time.Second),
		lock("a-expiring", "o1", 4*time.Second),
		lock("c-nottl", "o3", provider.NoExpiry),
		lock("d-held", "o1", 90*time.Second),
	}, t0, 1)
	s.Observe([]operator.Lock{lock("e-new", "o0", 30*time.Second)}, t0.Add(time.Second), 0)
	now := t0.Add(time.Second)
	cases := []struct {
		sort store.Sort
		want []string
	}{
		{store.Sort{}, []string{"c-nottl", "a-expiring", "b-held", "d-held", "e-new"}},
		{store.Sort{Column: store.LockByKey}, []string{"a-expiring", "b-held", "c-nottl", "d-held", "e-new"}},
		{store.Sort{Column: store.LockByKey, Reverse: true}, []string{"e-new", "d-held", "c-nottl", "b-held", "a-expiring"}},
		{store.Sort{Column: store.LockByOwner}, []string{"e-new", "a-expiring", "d-held", "b-held", "c-nottl"}},
		{store.Sort{Column: store.LockByTTL}, []string{"a-expiring", "e-new", "b-held", "d-held", "c-nottl"}},
		{store.Sort{Column: store.LockByHeld}, []string{"a-expiring", "b-held", "c-nottl", "d-held", "e-new"}},
	}
	for _, c := range cases {
		v := s.Build(store.Query{LockSort: c.sort}, now)
		assert.Equal(t, c.want, keysOf(v), "sort %+v", c.sort)
	}
	v := s.Build(store.Query{LockSort: store.Sort{Column: store.LockByKey}}, now)
	assert.Equal(t, 2, v.Index("c-nottl"))
	assert.Equal(t, -1, v.Index("missing"))
}

func TestSortByContention(t *testing.T) {
	s := store.New()
	s.Observe([]operator.Lock{lock("a", "o", time.Minute), lock("b", "o", time.Minute), lock("c", "o", time.Minute)}, t0, 1)
	for i := 0; i < 3; i++ {
		s.Event(store.Event{Kind: provider.EventWaiting, Key: "c", Owner: "w", Time: t0})
	}
	s.Event(store.Event{Kind: provider.EventWaiting, Key: "b", Owner: "w", Time: t0})
	v := s.Build(store.Query{LockSort: store.Sort{Column: store.LockByContended}}, t0)
	assert.Equal(t, []string{"c", "b", "a"}, keysOf(v))
}

func TestOwners(t *testing.T) {
	s := filterStore()
	s.Observe([]operator.Lock{lock("cart:3", "execute:1111", time.Minute)}, t0.Add(time.Second), 0)
	s.Observe([]operator.Lock{{Key: "list", Foreign: true, TTL: provider.NoExpiry}}, t0, 0)
	v := s.Build(store.Query{}, t0.Add(2*time.Second))
	require.Len(t, v.Owners, 5, "a foreign key has no owner")
	first := v.Owners[0]
	assert.Equal(t, "execute:1111", first.Owner)
	assert.Equal(t, 2, first.Keys)
	assert.Equal(t, "execute", first.Kind)
	assert.Equal(t, "cart:1", first.OldestKey)
	assert.Equal(t, t0, first.Oldest)
	assert.Equal(t, 2, v.OwnerKeys["execute:1111"])
	kinds := map[string]string{}
	for _, o := range v.Owners {
		kinds[o.Owner] = o.Kind
	}
	assert.Equal(t, map[string]string{"execute:1111": "execute", "execute:2222": "execute",
		"svc-a": "named", "svc-b": "named", "*": "anonymous"}, kinds)

	v = s.Build(store.Query{Filter: "owner:svc", OwnerSort: store.Sort{Column: store.OwnerByOwner, Reverse: true}}, t0)
	require.Len(t, v.Owners, 2)
	assert.Equal(t, "svc-b", v.Owners[0].Owner)
	assert.Equal(t, 1, v.OwnerKeys["*"], "OwnerKeys ignores the filter: it is what release-all takes")
}

func TestSortNext(t *testing.T) {
	s := store.Sort{Column: store.LockByContended, Reverse: true}
	assert.Equal(t, store.Sort{Column: store.LockByState}, s.Next(len(store.LockColumns)))
}

func TestGoneRowsComeAfterLiveOnesInEveryOrder(t *testing.T) {
	s := store.New()
	s.Observe([]operator.Lock{lock("a-gone", "o", time.Minute), lock("b-gone", "o", time.Minute)}, t0, 1)
	s.Observe([]operator.Lock{lock("c-live", "o", time.Minute), lock("d-nottl", "o", provider.NoExpiry)}, t0, 2)
	s.EndScan(2, t0.Add(time.Millisecond), t0.Add(time.Second))
	s.Absent([]string{"b-gone"}, t0.Add(2*time.Second))
	now := t0.Add(2 * time.Second)
	for col := range store.LockColumns {
		for _, reverse := range []bool{false, true} {
			v := s.Build(store.Query{LockSort: store.Sort{Column: col, Reverse: reverse}}, now)
			got := keysOf(v)
			require.Len(t, got, 4)
			assert.ElementsMatch(t, []string{"c-live", "d-nottl"}, got[:2], "sort %d reverse %v: live rows first", col, reverse)
			assert.ElementsMatch(t, []string{"a-gone", "b-gone"}, got[2:], "sort %d reverse %v: GONE rows last", col, reverse)
		}
	}
}

func TestMatchedCountsTheLiveLocksThatPassTheFilter(t *testing.T) {
	s := filterStore()
	all := s.Build(store.Query{}, t0)
	assert.Equal(t, all.Total, all.Matched, "no filter: every lock matches")
	v := s.Build(store.Query{Filter: "cart"}, t0)
	assert.Equal(t, all.Total, v.Total)
	assert.Equal(t, len(v.Locks), v.Matched)
	assert.Less(t, v.Matched, v.Total)
}

func TestForeignKeyWithoutExpiryHasNoExpiry(t *testing.T) {
	s := store.New()
	s.Observe([]operator.Lock{{Key: "list", Foreign: true, TTL: provider.NoExpiry},
		{Key: "hash", Foreign: true, TTL: 30 * time.Second}}, t0, 1)
	assert.Equal(t, provider.NoExpiry, s.Lock("list").TTL(t0.Add(time.Hour)), "not about to expire: never")
	assert.Equal(t, 20*time.Second, s.Lock("hash").TTL(t0.Add(10*time.Second)))
	assert.Equal(t, store.StateForeign, s.Lock("list").State(t0))
}

// The console shows an empty owner, and keys and owners with spaces or control characters,
// quoted and escaped (operator.Printable); typed that way after "/", they are matched exactly,
// so what the operator sees is what they can filter by.
func TestQuotedFilterMatchesWhatTheConsoleShows(t *testing.T) {
	s := store.New()
	s.Observe([]operator.Lock{
		lock("empty-owner", "", provider.NoExpiry),
		lock("spaced", "svc one", time.Minute),
		lock("escape", "svc\x1b[2J", time.Minute),
		lock("with space", "o", time.Minute),
		lock("plain", "svc", time.Minute),
		lock(`"quoted"`, "o", time.Minute),                   // shown as "\"quoted\"", so the filter reads it back
		{Key: "hash", Foreign: true, TTL: provider.NoExpiry}, // no owner, not the empty one
	}, t0, 1)
	for filter, want := range map[string][]string{
		`owner:""`:                     {"empty-owner"},
		`owner:=""`:                    {"empty-owner"},
		`owner:"svc one"`:              {"spaced"},
		`owner:"svc\x1b[2J"`:           {"escape"},
		`"with space"`:                 {"with space"},
		`="with space"`:                {"with space"},
		`owner:svc`:                    {"spaced", "escape", "plain"},
		`owner:"svc`:                   nil, // not a quoted string: a substring, which no owner holds
		operator.Printable(`"quoted"`): {`"quoted"`},
		`"quoted"`:                     nil, // the key quoted stands for quoted, which is no key
	} {
		v := s.Build(store.Query{Filter: filter, LockSort: store.Sort{Column: store.LockByKey}}, t0)
		assert.ElementsMatch(t, want, keysOf(v), "filter %q", filter)
	}
	for filter, want := range map[string]string{`="with space"`: "with space", `"with space"`: "with space", `=plain`: "plain"} {
		key, ok := store.ExactKey(filter)
		assert.True(t, ok, "filter %q names one key", filter)
		assert.Equal(t, want, key, "filter %q", filter)
	}
}

// Keys that read like filter syntax can be filtered for literally, with store.Literal first.
var literalFilterTests = []struct {
	filter string
	want   []string
}{
	{`\=cart`, []string{"=cart", "=cart:2"}},
	{`\owner:1`, []string{"owner:1"}},
	{`\holder:web`, []string{"holder:web"}},
	{`\"x`, []string{`"x`}},
	{`\owner:*`, []string{"owner:1"}},       // a glob keeps its escapes: \o is o
	{`\=cart:?`, []string{"=cart:2"}},       // so does this one
	{`owner:\=svc`, []string{"holder:web"}}, // after owner:, the owner =svc taken literally
	{`=cart`, []string{"cart"}},             // without it, = still names one key exactly
	{`owner:1`, nil},                        // and owner: still filters owners
}

func TestLiteralFilter(t *testing.T) {
	s := store.New()
	s.Observe([]operator.Lock{
		lock("=cart", "o", time.Minute),
		lock("=cart:2", "o", time.Minute),
		lock("cart", "o", time.Minute),
		lock("owner:1", "o", time.Minute),
		lock("holder:web", "=svc", time.Minute),
		lock(`"x`, "o", time.Minute),
	}, t0, 1)
	for _, tt := range literalFilterTests {
		v := s.Build(store.Query{Filter: tt.filter, LockSort: store.Sort{Column: store.LockByKey}}, t0)
		assert.ElementsMatch(t, tt.want, keysOf(v), "filter %q", tt.filter)
		_, exact := store.ExactKey(tt.filter)
		assert.Equal(t, tt.filter == "=cart", exact, "ExactKey(%q)", tt.filter)
	}
}
