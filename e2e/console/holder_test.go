package console_test

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/provider"
)

// A stuck lock names the process that holds it and for how long, in the locks view and in the
// owners view grouped by process; a lock taken the stock way (a plain SET, no record) says so.
func TestConsoleNamesTheHoldingProcess(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	ctx := context.Background()
	worker := provider.New(client, &provider.Options{Holder: provider.Holder{Host: "web-1", PID: 4242, Program: "medusa-worker"}})
	require.NoError(t, worker.Acquire(ctx, []string{"cart:stuck"}, provider.AcquireOptions{Owner: "execute:1", Expire: provider.NoExpiry}))
	require.NoError(t, worker.Acquire(ctx, []string{"order:7"}, provider.AcquireOptions{Owner: "execute:2", Expire: time.Hour}))
	require.NoError(t, client.Set(ctx, "medusa_lock:stock:1", "svc", time.Hour).Err()) // as stock Medusa does

	term := startTerminal(t, buildLocktui(t)+" --redis "+srv.URL+" --read-only")
	screen := term.await("the locks view names the holder", "cart:stuck", "stock:1", "HOLDER", "no record")
	require.Regexp(t, regexp.MustCompile(`cart:stuck +execute:1 +medu…orker/4242 +no expiry +\d+s `), screen, "the HOLDER column shortened to 80 columns, HELD exact")
	require.Contains(t, screen, "holder medusa-worker (pid 4242 on web-1, go client) · held", "the selected NO TTL lock's holder in full")

	term.keys("2", "t")
	screen = term.await("the owners view groups by process", "PROCESS", "no holder record")
	require.Regexp(t, regexp.MustCompile(`2 medusa-worker/4242@web-1 +go +2 `), screen, "one process holding under two owner ids")
	require.Contains(t, screen, "medusa-worker (pid 4242 on web-1, go client) · 2 locks")

	term.keys("q")
	term.await("console exits cleanly", "EXIT=0")
}
