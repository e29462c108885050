package audit_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locktui/locktui/audit"
	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var sample = audit.Record{
	Time:      time.Date(2025, 3, 1, 12, 30, 0, 123456789, time.UTC),
	Operator:  "ana@ops-1",
	Action:    audit.ActionForceRelease,
	Key:       "cart:cart_01J",
	Owner:     "execute:5f0c",
	Result:    audit.ResultReleased,
	Count:     1,
	Namespace: "medusa_lock:",
	Server:    "redis://:xxxxx@cache:6379",
}

// readLines parses every line of a JSONL file.
func readLines(t *testing.T, path string) []audit.Record {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []audit.Record
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r audit.Record
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r), "line %q", sc.Text())
		out = append(out, r)
	}
	require.NoError(t, sc.Err())
	return out
}

func newFile(t *testing.T) *audit.File {
	t.Helper()
	f, err := audit.NewFile(filepath.Join(t.TempDir(), "state", "audit.jsonl"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	return f
}

func TestFileAppendsJSONLines(t *testing.T) {
	f := newFile(t)
	ctx := t.Context()
	require.NoError(t, f.Write(ctx, sample))
	before := time.Now()
	require.NoError(t, f.Write(ctx, audit.Record{Action: audit.ActionReleaseOwner, Owner: "*", Result: audit.ResultNotHeld}))
	require.NoError(t, f.Close())

	got := readLines(t, f.Path())
	require.Len(t, got, 2)
	assert.Equal(t, sample, got[0])
	assert.Equal(t, audit.Operator(), got[1].Operator, "an empty operator is the current user")
	assert.WithinRange(t, got[1].Time, before.Add(-time.Second), time.Now())

	raw, err := os.ReadFile(f.Path())
	require.NoError(t, err)
	line := strings.SplitN(string(raw), "\n", 2)[0]
	for _, field := range []string{`"time":"2025-03-01T12:30:00.123456789Z"`, `"operator":`, `"action":"force_release"`,
		`"key":`, `"owner":`, `"result":"released"`, `"count":1`, `"namespace":`, `"server":`} {
		assert.Contains(t, line, field)
	}
	info, err := os.Stat(f.Path())
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	err = f.Write(ctx, sample)
	assert.ErrorContains(t, err, f.Path(), "a write after Close is reported")
}

func TestFileAppendsToExistingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	for range 2 {
		f, err := audit.NewFile(path)
		require.NoError(t, err)
		require.NoError(t, f.Write(t.Context(), sample))
		require.NoError(t, f.Close())
	}
	assert.Len(t, readLines(t, path), 2)
}

func TestConcurrentWritesDoNotInterleave(t *testing.T) {
	f := newFile(t)
	const writers, each = 4, 25
	big := strings.Repeat("x", 8<<10) // far more than PIPE_BUF: a torn write would show
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				r := sample
				r.Key = big
				r.Count = w*each + i
				assert.NoError(t, f.Write(t.Context(), r))
			}
		})
	}
	wg.Wait()
	got := readLines(t, f.Path())
	require.Len(t, got, writers*each)
	seen := map[int]bool{}
	for _, r := range got {
		assert.Equal(t, big, r.Key)
		seen[r.Count] = true
	}
	assert.Len(t, seen, writers*each, "every record is there exactly once")
}

func TestNewFileReportsUnusablePath(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o600))
	_, err := audit.NewFile(filepath.Join(blocker, "audit.jsonl"))
	assert.ErrorContains(t, err, blocker)
	_, err = audit.NewFile("")
	assert.Error(t, err)
}

func TestStreamAddsTrimmedEntries(t *testing.T) {
	client := redistest.Start(t).Client(t)
	ctx := t.Context()
	s := audit.NewStream(client, "", 0)
	assert.Equal(t, audit.DefaultStream, s.Name())
	require.NoError(t, s.Write(ctx, sample))
	entries, err := client.XRange(ctx, audit.DefaultStream, "-", "+").Result()
	require.NoError(t, err)
	require.Len(t, entries, 1)
	got, err := audit.FromStream(entries[0].Values)
	require.NoError(t, err)
	assert.Equal(t, sample, got)

	small := audit.NewStream(client, "audit:small", 10)
	for i := range 500 {
		r := sample
		r.Count = i
		require.NoError(t, small.Write(ctx, r))
	}
	n, err := client.XLen(ctx, "audit:small").Result()
	require.NoError(t, err)
	assert.Less(t, n, int64(500), "MAXLEN ~ trims the stream")
	assert.GreaterOrEqual(t, n, int64(10), "approximate trimming keeps at least maxLen entries")
}

func TestStreamFailureIsReported(t *testing.T) {
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	srv.Stop()
	err := audit.NewStream(client, "audit", 0).Write(t.Context(), sample)
	assert.ErrorContains(t, err, `stream "audit"`)
}

type failing struct{ err error }

func (f failing) Write(context.Context, audit.Record) error { return f.err }

type recorder struct {
	mu  sync.Mutex
	got []audit.Record
}

func (r *recorder) Write(_ context.Context, rec audit.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, rec)
	return nil
}

func TestMultiWritesEverywhereAndJoinsErrors(t *testing.T) {
	a, b := &recorder{}, &recorder{}
	boom := errors.New("disk full")
	sink := audit.Multi(a, nil, failing{boom}, b)
	err := sink.Write(t.Context(), audit.Record{Action: audit.ActionForceReleaseAny, Key: "k"})
	require.ErrorIs(t, err, boom)
	require.Len(t, a.got, 1)
	require.Len(t, b.got, 1)
	assert.Equal(t, a.got[0], b.got[0], "every sink gets the same completed record")
	assert.False(t, a.got[0].Time.IsZero())
	assert.NotEmpty(t, a.got[0].Operator)

	assert.NoError(t, audit.Multi(a).Write(t.Context(), sample))
}

func TestOperator(t *testing.T) {
	op := audit.Operator()
	user, host, ok := strings.Cut(op, "@")
	require.True(t, ok, "Operator() = %q, want user@host", op)
	assert.NotEmpty(t, user)
	wantHost, err := os.Hostname()
	require.NoError(t, err)
	assert.Equal(t, wantHost, host)
}

func TestResultError(t *testing.T) {
	assert.Equal(t, "error: redis: connection refused", audit.ResultError(errors.New("redis: connection refused")))
}

func TestDefaultPath(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/state")
	p, err := audit.DefaultPath()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join("/state", "locktui", "audit.jsonl"), p)
}
