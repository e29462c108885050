package tui

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
	"github.com/locktui/locktui/tui/store"
)

// update rewrites the golden screens: go test ./tui -run Golden -update
var update = flag.Bool("update", false, "rewrite the golden screens in testdata/")

// operatorStore is what an operator meets at 3 a.m.: cart locks whose ids differ only at their
// end, a stuck NO TTL owner, the empty owner, an owner with a terminal escape, a key of another
// type, and locks that just went away; three locks have holder records (two of them one
// worker process's), the cart lock the detail shows held for hours, which the console has seen
// for five minutes.
func operatorStore() *store.Store {
	s := store.New()
	exec := "execute:0b5a3c1e-0000-4000-8000-0000000000"
	worker := provider.Holder{Host: "ip-10-0-12-34", PID: 4242, Program: "medusa-worker", Client: provider.ClientBridge}
	server := provider.Holder{Host: "web-1", PID: 311, Program: "medusa-server", Client: provider.ClientGo}
	locks := []operator.Lock{
		{Key: "inventory:iitem_01JK4KH3QZ8W5N2M7XG1AB", Owner: exec + "01", TTL: 42 * time.Second, Record: &operator.Record{
			Holder: server, AcquiredAt: clock.Add(-12 * time.Minute), FencingToken: 1796180000000002}},
		{Key: "inventory:iitem_01JK4KH3QZ8W5N2M7XG1CD", Owner: exec + "02", TTL: 800 * time.Millisecond},
		{Key: "cart:cart_01JK4KH3QZ8W5N2M7XG1EF", Owner: exec + "03", TTL: 55 * time.Second, Record: &operator.Record{
			Holder: worker, AcquiredAt: clock.Add(-3 * time.Hour), FencingToken: 1796180000000001}},
		{Key: "cart:cart_01JK4KH3QZ8W5N2M7XG1GH", Owner: exec + "04", TTL: 58 * time.Second, Record: &operator.Record{
			Holder: worker, AcquiredAt: clock.Add(-40 * time.Second), FencingToken: 1796180000000003}},
		{Key: "k-stuck", Owner: "worker-crashed", TTL: provider.NoExpiry},
		{Key: "migration-scripts-running", Owner: "", TTL: provider.NoExpiry},
		{Key: "order:7", Owner: "svc\x1b[2J", TTL: 30 * time.Second},
		{Key: "stats", Foreign: true, TTL: provider.NoExpiry},
		{Key: "gone:1", Owner: "*", TTL: 10 * time.Second},
		{Key: "gone:2", Owner: "*", TTL: 10 * time.Second},
	}
	s.Observe(locks, clock.Add(-5*time.Minute), 1)                       // first seen five minutes ago
	s.Observe(locks, clock.Add(-10*time.Second), 2)                      // and renewed since
	s.EndScan(2, clock.Add(-10*time.Second), clock.Add(-10*time.Second)) // the first refresh is shown
	s.Observe([]operator.Lock{
		{Key: "inventory:iitem_01JK4KH3QZ8W5N2M7XG1CD", Owner: exec + "02", TTL: 800 * time.Millisecond},
	}, clock.Add(-100*time.Millisecond), 3)
	s.Absent([]string{"gone:1", "gone:2"}, clock.Add(-time.Second))
	s.Event(store.Event{Kind: provider.EventWaiting, Key: "k-stuck", Owner: "w1", Time: clock.Add(-2 * time.Second)})
	s.Event(store.Event{Kind: provider.EventWaiting, Key: "k-stuck", Owner: "w2", Time: clock.Add(-time.Second)})
	return s
}

// golden compares the screen at 80 × 24 with testdata/name.golden.
func golden(t *testing.T, m *model, name string) {
	t.Helper()
	got := screen(m)
	path := filepath.Join("testdata", name+".golden")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "no golden screen: run go test ./tui -run Golden -update")
	assert.Equal(t, string(want), got, "screen %s (rewrite with -update after checking the difference)", name)
}

func TestGoldenScreens(t *testing.T) {
	cases := []struct {
		name string
		keys []string
	}{
		{"locks", nil},
		{"locks-filtered", []string{"/", "c", "a", "r", "t", "enter"}},
		{"locks-filtered-by-holder", append(append([]string{"/"}, strings.Split("holder:4242", "")...), "enter")},
		{"locks-selected-escape", []string{"down", "down", "down"}},
		{"detail", []string{"down", "down", "down", "down", "enter"}},
		{"hot", []string{"3"}},
		{"owners", []string{"2"}},
		{"owners-by-process", []string{"2", "t"}},
		{"owners-by-process-worker", []string{"2", "t", "down"}},
		{"help", []string{"?"}},
		{"release-dialog", []string{"d"}},
		{"release-dialog-holder", []string{"down", "down", "down", "down", "d"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newTestModel(t, Config{Audit: &memorySink{}})
			connected(m)
			s := operatorStore()
			feed(m, s)
			for _, k := range c.keys {
				press(m, k)
				feed(m, s) // the hub answers a new query with a new View
			}
			golden(t, m, c.name)
		})
	}
}
