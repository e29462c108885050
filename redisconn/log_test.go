package redisconn_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/freeport"
	"github.com/locktui/locktui/internal/testsupport"
	"github.com/locktui/locktui/redisconn"
)

// closedPortURL returns a redis:// URL of a loopback port nobody listens on.
func closedPortURL(t *testing.T) string {
	t.Helper()
	addr, err := freeport.Addr()
	require.NoError(t, err)
	return "redis://" + addr
}

// provokeDialFailure makes go-redis log its "failed to dial" line once.
func provokeDialFailure(t *testing.T) {
	t.Helper()
	client, err := redisconn.Open(closedPortURL(t)+"?max_retries=-1", redisconn.TLSFiles{})
	require.NoError(t, err)
	defer client.Close()
	require.Error(t, client.Ping(context.Background()).Err())
}

func TestLogToSendsGoRedisLinesToSlog(t *testing.T) {
	var out testsupport.Buffer
	restore := redisconn.LogTo(slog.New(slog.NewJSONHandler(&out, nil)))
	defer restore()
	provokeDialFailure(t)

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.NotEmpty(t, lines[0], "go-redis logged nothing through slog")
	for _, line := range lines {
		var rec struct {
			Level, Msg string
		}
		require.NoError(t, json.Unmarshal([]byte(line), &rec), "not a JSON record: %s", line)
		require.Equal(t, "WARN", rec.Level, line)
		require.True(t, strings.HasPrefix(rec.Msg, "redis: "), line)
		require.NotContains(t, strings.TrimPrefix(rec.Msg, "redis: "), "redis: ", "the prefix is not doubled: %s", line)
	}
	require.Contains(t, out.String(), "redis: connection pool: failed to dial")
}

func TestLogToRestoresThePreviousRoute(t *testing.T) {
	var first, second testsupport.Buffer
	restoreFirst := redisconn.LogTo(slog.New(slog.NewTextHandler(&first, nil)))
	defer restoreFirst()
	restoreSecond := redisconn.LogTo(slog.New(slog.NewTextHandler(&second, nil)))
	provokeDialFailure(t)
	require.Contains(t, second.String(), "failed to dial")
	require.Empty(t, first.String())

	restoreSecond()
	restoreSecond() // a second call changes nothing
	provokeDialFailure(t)
	require.Contains(t, first.String(), "failed to dial")

	restoreNil := redisconn.LogTo(nil) // discards
	defer restoreNil()
	before := first.String() + second.String()
	provokeDialFailure(t)
	require.Equal(t, before, first.String()+second.String())
}

func TestLogToHonoursTheLevel(t *testing.T) {
	var out testsupport.Buffer
	restore := redisconn.LogTo(slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelError})))
	defer restore()
	provokeDialFailure(t)
	require.Empty(t, out.String(), "go-redis lines are warnings")
}
