package tui

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/tui/store"
)

// The cursor stays on the top row until the View that holds the first full scan has been
// shown, even when the watcher's status says the refresh is done before that View arrives (the
// two come on separate channels; on a Cluster the masters' batches arrive in any order, and the
// last one may hold the key that sorts first). After it, the cursor follows its key.
func TestCursorStaysOnTopUntilTheFirstScanIsShown(t *testing.T) {
	m := newTestModel(t, Config{})
	s := store.New()
	held := func(keys ...string) {
		for _, k := range keys {
			s.Observe([]operator.Lock{{Key: k, Owner: "o", TTL: time.Hour}}, clock, 1)
		}
	}
	held("cart:b", "cart:c") // one master's batch
	feed(m, s)
	assert.Contains(t, screen(m), "key cart:b ")
	connected(m) // the status of the finished refresh, before the View with its last batch

	held("cart:a") // another master's batch, then the end of the scan
	s.EndScan(1, clock.Add(-time.Second), clock)
	feed(m, s)
	assert.Contains(t, screen(m), "key cart:a ", "the top row, where the first suspects sort")

	held("cart:0") // after the first refresh the cursor follows its key
	feed(m, s)
	assert.Contains(t, screen(m), "key cart:a ")
}
