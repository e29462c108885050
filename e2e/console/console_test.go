// Package console_test drives the real locktui console in a real terminal (tmux) against a real
// redis-server, as an operator would: find the stuck owner, force-release it, quit.
package console_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/testsupport"
	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/provider"
)

const tmuxHint = "tmux not found on PATH: install it with `apt-get update && apt-get install -y tmux`"

// terminal is one tmux session running a command in an 80×24 window.
type terminal struct {
	t       *testing.T
	session string
	socket  string
}

func startTerminal(t *testing.T, command string) *terminal {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal(tmuxHint)
	}
	term := &terminal{t: t, session: "locktui-e2e", socket: filepath.Join(t.TempDir(), "tmux.sock")}
	// A private server socket: the test never touches the user's tmux sessions.
	term.tmux("new-session", "-d", "-s", term.session, "-x", "80", "-y", "24",
		"sh", "-c", command+"; echo EXIT=$?; sleep 60")
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", term.socket, "kill-server").Run() })
	return term
}

func (term *terminal) tmux(args ...string) string {
	term.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", term.socket}, args...)...).CombinedOutput()
	require.NoError(term.t, err, "tmux %v: %s", args, out)
	return string(out)
}

func (term *terminal) screen() string { return term.tmux("capture-pane", "-p", "-t", term.session) }

func (term *terminal) keys(keys ...string) {
	term.tmux(append([]string{"send-keys", "-t", term.session}, keys...)...)
}

// await waits until the screen shows every one of want.
func (term *terminal) await(what string, want ...string) string {
	term.t.Helper()
	var last string
	ok := assertEventually(20*time.Second, func() bool {
		last = term.screen()
		for _, w := range want {
			if !strings.Contains(last, w) {
				return false
			}
		}
		return true
	})
	require.True(term.t, ok, "%s: screen never showed %q; last screen:\n%s", what, want, last)
	return last
}

func assertEventually(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return cond()
}

// locktuiBin is built once per test binary by TestMain.
var locktuiBin string

func TestMain(m *testing.M) {
	testsupport.Main(m, testsupport.MainOptions{Build: "github.com/locktui/locktui/cmd/locktui", Binary: &locktuiBin})
}

func buildLocktui(*testing.T) string { return locktuiBin }

func TestOperatorFindsAndReleasesStuckOwner(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	locks := provider.New(client, nil)
	ctx := context.Background()

	// A stuck owner (no TTL) and a healthy lock of another owner that must survive.
	require.NoError(t, locks.Acquire(ctx, []string{"cart:stuck"}, provider.AcquireOptions{Owner: "worker-crashed", Expire: provider.NoExpiry}))
	require.NoError(t, locks.Acquire(ctx, []string{"order:healthy"}, provider.AcquireOptions{Owner: "worker-ok", Expire: time.Hour}))

	bin := buildLocktui(t)
	auditLog := filepath.Join(t.TempDir(), "audit.jsonl")
	term := startTerminal(t, bin+" --redis "+srv.URL+" --audit-log "+auditLog)

	term.await("console lists the locks", "cart:stuck", "worker-crashed", "NO TTL", "order:healthy")

	// The stuck lock sorts first (NO TTL draws attention); filter to it to be sure it is selected.
	term.keys("/")
	term.keys("-l", "cart:stuck")
	term.keys("Enter")
	term.await("filter applied", "cart:stuck")
	term.keys("d")
	term.await("confirm dialog names key and owner", "Force-release", "cart:stuck", "worker-crashed")
	term.keys("y")

	require.Eventually(t, func() bool {
		n, err := client.Exists(ctx, "medusa_lock:cart:stuck").Result()
		return err == nil && n == 0
	}, 15*time.Second, 50*time.Millisecond, "the stuck lock was not released")
	owner, err := client.Get(ctx, "medusa_lock:order:healthy").Result()
	require.NoError(t, err)
	require.Equal(t, "worker-ok", owner, "another owner's lock must survive")

	term.keys("q")
	term.await("console exits cleanly", "EXIT=0")

	records := readAudit(t, auditLog)
	require.Len(t, records, 1)
	require.Equal(t, "cart:stuck", records[0]["key"])
	require.Equal(t, "worker-crashed", records[0]["owner"])
	require.Equal(t, "released", records[0]["result"])
}

func TestReadOnlyConsoleCannotRelease(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	locks := provider.New(client, nil)
	ctx := context.Background()
	require.NoError(t, locks.Acquire(ctx, []string{"cart:stuck"}, provider.AcquireOptions{Owner: "worker-crashed", Expire: provider.NoExpiry}))

	term := startTerminal(t, buildLocktui(t)+" --redis "+srv.URL+" --read-only")
	term.await("console lists the lock with an RO badge", "cart:stuck", " RO ")
	term.keys("d")
	term.keys("y")
	term.keys("D")
	term.keys("y")
	term.keys("q")
	term.await("console exits cleanly", "EXIT=0")

	owner, err := client.Get(ctx, "medusa_lock:cart:stuck").Result()
	require.NoError(t, err)
	require.Equal(t, "worker-crashed", owner)
}

func TestUnreachableRedisIsOneLine(t *testing.T) {
	srv := redistest.Start(t)
	url := srv.URL
	srv.Stop()
	out, err := exec.Command(buildLocktui(t), "--redis", url).CombinedOutput()
	require.Error(t, err)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, 1, "want one error line, got:\n%s", out)
	require.True(t, strings.HasPrefix(lines[0], "locktui: "), "got %q", lines[0])
}

func readAudit(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var rec map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
		out = append(out, rec)
	}
	require.NoError(t, sc.Err())
	return out
}
