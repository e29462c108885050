package console_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/provider"
)

// otherKeys fills the database with n keys outside the namespace, in pipelined MSETs.
func otherKeys(t *testing.T, ctx context.Context, srv *redistest.Server, n int) {
	t.Helper()
	client := srv.Client(t)
	const per = 1000
	pipe := client.Pipeline()
	for i := 0; i < n; i += per {
		args := make([]any, 0, 2*per)
		for j := i; j < min(i+per, n); j++ {
			args = append(args, fmt.Sprintf("session:%07d", j), "x")
		}
		pipe.MSet(ctx, args...)
	}
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)
}

// An exact filter on a large server shows the key at once, long before the first refresh
// (paced to 20,000 a second: about 20 s for 400,000 keys) can reach it, and the table never says
// "no locks match" while that refresh runs.
func TestExactLookupOnALargeServer(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	otherKeys(t, ctx, srv, 400_000)
	locks := provider.New(srv.Client(t), nil)
	require.NoError(t, locks.Acquire(ctx, []string{"k-stuck"}, provider.AcquireOptions{Owner: "worker-crashed", Expire: provider.NoExpiry}))

	term := startTerminal(t, buildLocktui(t)+" --redis "+srv.URL+" --audit-log "+filepath.Join(t.TempDir(), "audit.jsonl"))
	term.await("console opens and starts its first refresh", "loading…")
	start := time.Now()
	term.keys("/")
	term.keys("-l", "=k-stuck")
	term.keys("Enter")
	screen := term.await("the key is read at once", "k-stuck", "worker-crashed", "NO TTL")
	took := time.Since(start)
	require.Contains(t, screen, "loading…", "found while the first refresh still runs (it took %s)", took)
	require.NotContains(t, screen, "no locks match")
	require.Less(t, took, 10*time.Second)

	term.keys("/")
	term.keys("C-u")
	term.keys("-l", "=k-nothere")
	term.keys("Enter")
	screen = term.await("a missing key is said to be missing", "k-nothere is not locked")
	require.NotContains(t, screen, "no locks match")

	term.keys("q")
	term.await("console exits cleanly", "EXIT=0")
}

// c copies the selected key with OSC 52 (the terminal's clipboard, also over SSH), C its owner.
func TestCopySendsOSC52(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	locks := provider.New(srv.Client(t), nil)
	require.NoError(t, locks.Acquire(ctx, []string{"cart:stuck"}, provider.AcquireOptions{Owner: "worker-crashed", Expire: provider.NoExpiry}))

	term := startTerminal(t, buildLocktui(t)+" --redis "+srv.URL+" --read-only")
	raw := filepath.Join(t.TempDir(), "pane.raw")
	term.tmux("pipe-pane", "-o", "-t", term.session, "cat >> "+raw)
	term.await("console lists the lock", "cart:stuck", "worker-crashed")
	term.keys("c")
	term.await("the copy is confirmed", "copied key cart:stuck")
	term.keys("C")
	term.await("the copy is confirmed", "copied owner worker-crashed")

	osc52 := func(s string) string { return "\x1b]52;c;" + base64.StdEncoding.EncodeToString([]byte(s)) }
	var out string
	require.True(t, assertEventually(10*time.Second, func() bool {
		b, _ := os.ReadFile(raw)
		out = string(b)
		return strings.Contains(out, osc52("cart:stuck")) && strings.Contains(out, osc52("worker-crashed"))
	}), "no OSC 52 sequence for the key and the owner in the terminal's output:\n%q", out)

	term.keys("q")
	term.await("console exits cleanly", "EXIT=0")
}
