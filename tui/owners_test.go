package tui

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

// processStore has a worker process holding two locks under two owner ids, a stock lock and a
// process holding many locks (more than the pane under the table lists).
func processStore() *store.Store {
	worker := provider.Holder{Host: "web-1", PID: 4242, Program: "medusa-worker", Client: provider.ClientBridge}
	batch := provider.Holder{Host: "batch-1", PID: 9, Program: "importer", Client: provider.ClientGo}
	held := func(key, owner string, h provider.Holder, since time.Duration) operator.Lock {
		return operator.Lock{Key: key, Owner: owner, TTL: 2 * time.Minute,
			Record: &operator.Record{Holder: h, AcquiredAt: clock.Add(-since), FencingToken: 1}}
	}
	locks := []operator.Lock{
		held("cart:old", "execute:a", worker, 2*time.Hour),
		held("cart:new", "execute:b", worker, time.Minute),
		{Key: "stock:1", Owner: "svc", TTL: 2 * time.Minute},
	}
	for i := range 30 {
		locks = append(locks, held(fmt.Sprintf("import:%02d", i), "importer", batch, time.Duration(30-i)*time.Second))
	}
	s := store.New()
	s.Observe(locks, clock.Add(-time.Minute), 1)
	return s
}

func TestOwnersGroupByProcessAndBack(t *testing.T) {
	m := newTestModel(t, Config{})
	connected(m)
	s := processStore()
	feed(m, s)
	press(m, "t")
	assert.Equal(t, store.ByOwner, m.query.Grouping, "t only acts on the owners view")

	press(m, "2")
	press(m, "t")
	require.Equal(t, store.ByProcess, m.query.Grouping)
	feed(m, s)
	out := screen(m)
	assert.Contains(t, out, "owners grouped by process")
	assert.Regexp(t, `30 importer/9@batch-1 +go +1 +30s`, out, "most keys first")
	assert.Regexp(t, `2 medusa-worker/4242@web-1 +bridge +2 +2h00m cart:old`, out, "two owner ids, the oldest hold")
	assert.Regexp(t, `1 no holder record +- +1 +≥1m00s stock:1`, out)
	assert.Contains(t, out, "importer (pid 9 on batch-1, go client) · 30 locks", "the selected process's locks")
	assert.Regexp(t, `30s +1m00s  import:00 `, out, "oldest first, with how long held")
	assert.Contains(t, out, "… 23 more, newer", "the pane says what it leaves out")

	press(m, "down")
	out = screen(m)
	assert.Contains(t, out, "medusa-worker (pid 4242 on web-1, bridge client) · 2 locks")
	assert.Regexp(t, `2h00m +1m00s  cart:old +execute:a`, out)
	assert.Regexp(t, `1m00s +1m00s  cart:new +execute:b`, out)

	press(m, "D")
	assert.False(t, m.dialog.Active(), "a process is no owner id: nothing to release in bulk")
	assert.Contains(t, screen(m), "a process is not an owner id: t groups the owners by owner id")

	feed(m, s) // a new View keeps the process under the cursor
	r, ok := m.owners.SelectedProcess()
	require.True(t, ok)
	assert.Equal(t, "medusa-worker", r.Holder.Program)

	press(m, "enter")
	assert.Equal(t, pageDetail, m.active)
	assert.Equal(t, "cart:old", m.query.Detail, "enter shows the process's oldest lock")

	press(m, "esc", "t")
	assert.Equal(t, store.ByOwner, m.query.Grouping)
	feed(m, s)
	o, ok := m.owners.Selected()
	require.True(t, ok)
	assert.Equal(t, "importer", o.Owner)
	assert.Contains(t, screen(m), "owner importer · 30 locks")
	assert.Contains(t, screen(m), "(enter lists them all)")
}

func TestOwnersSortByProcessColumns(t *testing.T) {
	m := newTestModel(t, Config{})
	connected(m)
	s := processStore()
	press(m, "2", "t")
	for _, col := range store.ProcessColumns[1:] {
		press(m, "s")
		feed(m, s)
		assert.Contains(t, screen(m), col+"↓", "the header marks the sort column")
	}
	assert.Equal(t, store.Sort{Column: store.ProcessByOldest}, m.query.ProcessSort)
	assert.Equal(t, store.Sort{}, m.query.OwnerSort, "the grouping by owner keeps its order")
	assert.Equal(t, "medusa-worker", m.view.Processes[0].Holder.Program, "oldest hold first")
	r, _ := m.owners.SelectedProcess()
	assert.Equal(t, "importer", r.Holder.Program, "the cursor stays on the process it was on")
}

func TestOwnersPaneCountsDownOnlyWhileATTLIsOnScreen(t *testing.T) {
	m := newTestModel(t, Config{})
	s := store.New()
	s.Observe([]operator.Lock{{Key: "forever", Owner: "*", TTL: provider.NoExpiry}}, clock, 1)
	press(m, "2")
	m.Update(viewMsg{view: s.Build(m.query, clock)})
	assert.False(t, m.ticking, "nothing counts down: no ticks")

	s.Observe([]operator.Lock{{Key: "soon", Owner: "o", TTL: 10 * time.Second}}, clock, 1)
	m.Update(viewMsg{view: s.Build(m.query, clock)})
	press(m, "down") // the owner o, whose lock counts down in the pane
	require.True(t, m.ticking)
	m.common.Now = func() time.Time { return clock.Add(1500 * time.Millisecond) }
	m.Update(tickMsg{})
	assert.Regexp(t, `8\.5s  soon`, screen(m), "the pane's TTL counts down between refreshes")
}
