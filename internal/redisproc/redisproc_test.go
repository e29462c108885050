package redisproc_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/redisproc"
)

// start runs a server for one test, failing (never skipping) without redis-server.
func start(t *testing.T, opts redisproc.Options) *redisproc.Server {
	t.Helper()
	srv, err := redisproc.Start(t.Context(), opts)
	if errors.Is(err, redisproc.ErrNotFound) {
		t.Fatal(redisproc.InstallHint)
	}
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	return srv
}

func client(t *testing.T, srv *redisproc.Server, password string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), Password: password, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestStartServesOnLoopbackUntilStopped(t *testing.T) {
	srv := start(t, redisproc.Options{Args: []string{"--notify-keyspace-events", "KEA"}, KillWithParent: true})
	assert.Regexp(t, `^127\.0\.0\.1:\d+$`, srv.Addr())
	assert.NotEqual(t, "127.0.0.1:6379", srv.Addr())
	assert.Equal(t, "redis://"+srv.Addr(), srv.URL())
	assert.DirExists(t, srv.Dir())

	c := client(t, srv, "")
	require.NoError(t, c.Ping(t.Context()).Err())
	cfg, err := c.ConfigGet(t.Context(), "*").Result()
	require.NoError(t, err)
	assert.ElementsMatch(t, []rune("AKE"), []rune(cfg["notify-keyspace-events"]), "extra arguments reach the server")
	assert.Equal(t, "", cfg["save"], "no snapshots")
	assert.Equal(t, "no", cfg["appendonly"])
	assert.Equal(t, "127.0.0.1", cfg["bind"])

	srv.Stop()
	srv.Stop() // idempotent
	select {
	case <-srv.Done():
	default:
		t.Fatal("Done is open after Stop")
	}
	assert.Error(t, c.Ping(t.Context()).Err(), "the server still answers after Stop")
	_, err = os.Stat(srv.Dir())
	assert.True(t, os.IsNotExist(err), "Stop left its directory %s behind", srv.Dir())
}

func TestStopLeavesTheCallersDirectory(t *testing.T) {
	dir := t.TempDir()
	srv := start(t, redisproc.Options{Dir: dir})
	assert.Equal(t, dir, srv.Dir())
	srv.Stop()
	assert.DirExists(t, dir)
}

func TestDoneClosesWhenTheServerExitsOnItsOwn(t *testing.T) {
	srv := start(t, redisproc.Options{})
	_ = client(t, srv, "").ShutdownNoSave(t.Context()).Err() // the connection drops: no reply
	<-srv.Done()
	srv.Stop() // still safe, and removes the directory
	_, err := os.Stat(srv.Dir())
	assert.True(t, os.IsNotExist(err))
}

func TestStartWaitsForAServerWithAPassword(t *testing.T) {
	srv := start(t, redisproc.Options{Args: []string{"--requirepass", "s3cret"}})
	assert.Error(t, client(t, srv, "").Ping(t.Context()).Err(), "NOAUTH without the password")
	assert.NoError(t, client(t, srv, "s3cret").Ping(t.Context()).Err())
}

func TestStartQuotesTheServersComplaint(t *testing.T) {
	_, err := redisproc.LookPath("")
	require.NoError(t, err, redisproc.InstallHint)
	_, err = redisproc.Start(t.Context(), redisproc.Options{Args: []string{"--no-such-directive", "x"}, Attempts: 2})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exited during start-up")
	assert.Contains(t, err.Error(), "Bad directive", "the error quotes the server's output")
	assert.NotContains(t, err.Error(), "\n", "a one-line error")
}

func TestStartWithoutTheBinary(t *testing.T) {
	_, err := redisproc.Start(t.Context(), redisproc.Options{Bin: "no-such-redis-server"})
	require.ErrorIs(t, err, redisproc.ErrNotFound)
	assert.Contains(t, err.Error(), "apt-get install -y redis-server")

	_, err = redisproc.LookPath("no-such-redis-server")
	assert.ErrorIs(t, err, redisproc.ErrNotFound)
}

func TestStartHonoursItsContext(t *testing.T) {
	_, err := redisproc.LookPath("")
	require.NoError(t, err, redisproc.InstallHint)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = redisproc.Start(ctx, redisproc.Options{})
	assert.ErrorIs(t, err, context.Canceled)
}

func TestStartReadsTheConfigFileFirst(t *testing.T) {
	file := filepath.Join(t.TempDir(), "redis.conf")
	require.NoError(t, os.WriteFile(file, []byte("hz 20\nmaxmemory-policy allkeys-lru\n"), 0o600))
	srv := start(t, redisproc.Options{ConfigFile: file, Args: []string{"--hz", "30"}})
	cfg, err := client(t, srv, "").ConfigGet(t.Context(), "*").Result()
	require.NoError(t, err)
	assert.Equal(t, "allkeys-lru", cfg["maxmemory-policy"], "the file is read")
	assert.Equal(t, "30", cfg["hz"], "the arguments override the file")
	assert.Equal(t, "", cfg["save"], "the defaults still apply")
}

func TestStartClusterSplitsTheSlotsUntilStopped(t *testing.T) {
	cl, err := redisproc.StartCluster(t.Context(), 3)
	if errors.Is(err, redisproc.ErrNotFound) {
		t.Fatal(redisproc.InstallHint)
	}
	require.NoError(t, err)
	t.Cleanup(cl.Stop)
	addrs := cl.Addrs()
	require.Len(t, addrs, 3)
	assert.Equal(t, "redis://"+addrs[0]+"?cluster=true&addr="+addrs[1]+"&addr="+addrs[2], cl.URL)

	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	slots, err := c.ClusterSlots(t.Context()).Result()
	require.NoError(t, err)
	var ranges [][2]int
	for _, s := range slots {
		ranges = append(ranges, [2]int{s.Start, s.End})
	}
	assert.ElementsMatch(t, [][2]int{{0, 5460}, {5461, 10921}, {10922, 16383}}, ranges, "the slots split evenly")

	cl.Stop()
	cl.Stop() // idempotent
	for _, n := range cl.Nodes {
		select {
		case <-n.Done():
		default:
			t.Fatalf("node %s still runs after Stop", n.Addr())
		}
	}
}

func TestStartClusterWantsAMaster(t *testing.T) {
	_, err := redisproc.StartCluster(t.Context(), 0)
	require.ErrorContains(t, err, "want at least one")
}
