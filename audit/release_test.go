package audit_test

import (
	"context"
	"errors"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/audit"
	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
)

// failingSink refuses every record.
type failingSink struct{}

func (failingSink) Write(context.Context, audit.Record) error { return errors.New("disk full") }

func TestReleaserRecordsEveryOutcome(t *testing.T) {
	client := redistest.Start(t).Client(t)
	ctx := t.Context()
	p := provider.New(client, &provider.Options{Holder: provider.Holder{Host: "web-1", PID: 4242, Program: "medusa-worker"}})
	require.NoError(t, p.Acquire(ctx, []string{"a", "b", "c"}, provider.AcquireOptions{Owner: "o1"}))
	require.NoError(t, client.Set(ctx, p.RedisKey("stock"), "o3", 0).Err())
	require.NoError(t, client.HSet(ctx, p.RedisKey("hash"), "f", "v").Err())
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	trail, err := audit.Open(audit.Options{Path: path, Stream: "audit:test", Client: client})
	require.NoError(t, err)
	t.Cleanup(func() { _ = trail.Close() })
	r := &audit.Releaser{Inspector: operator.New(client, nil), Sink: trail, Operator: "ana@ops", Namespace: provider.DefaultNamespace, Server: "redis://x"}

	assert.Equal(t, audit.Released{Count: 0, Owner: "o2"}, brief(r.ForceReleaseOwner(ctx, "a", "o2", operator.TellHolderFirst)), "another owner's lock stays")
	assert.Equal(t, audit.Released{Count: 1, How: operator.Freed, Owner: "o1"}, brief(r.ForceReleaseOwner(ctx, "a", "o1", operator.TellHolderFirst)))
	assert.Equal(t, audit.Released{Count: 0, Owner: "o1"}, brief(r.ForceReleaseOwner(ctx, "hash", "o1", operator.TellHolderFirst)), "a key of another type is not held")
	assert.Equal(t, audit.Released{Count: 1, How: operator.Freed, Owner: "o1"}, brief(r.ForceReleaseAny(ctx, "b", operator.TellHolderFirst)))
	assert.Equal(t, audit.Released{Count: 1, Owner: "o1"}, r.ReleaseOwner(ctx, "o1", operator.TellHolderFirst))
	assert.Equal(t, audit.Released{Count: 1, How: operator.Freed, Owner: "o3"}, brief(r.ForceReleaseAny(ctx, "stock", operator.TellHolderFirst)))

	entries, err := client.XRange(ctx, "audit:test", "-", "+").Result()
	require.NoError(t, err)
	require.Len(t, entries, 6, "every release is recorded, also those that deleted nothing")
	const cutOff = `^medusa-worker \(pid 4242 on web-1, go client\), held since \S+Z, fencing token \d+$`
	want := []struct{ action, key, result, holder string }{
		{audit.ActionForceRelease, "a", audit.ResultNotHeld, ""},
		{audit.ActionForceRelease, "a", audit.ResultReleased, cutOff},
		{audit.ActionForceRelease, "hash", audit.ResultNotHeld, ""},
		{audit.ActionForceReleaseAny, "b", audit.ResultReleased, cutOff},
		{audit.ActionReleaseOwner, "", audit.ResultReleased, ""},
		{audit.ActionForceReleaseAny, "stock", audit.ResultReleased, "^" + regexp.QuoteMeta(operator.NoHolderRecord) + "$"}, // a lock without a record says so
	}
	for i, e := range entries {
		rec, err := audit.FromStream(e.Values)
		require.NoError(t, err)
		assert.Equal(t, want[i].action, rec.Action, "record %d", i)
		assert.Equal(t, want[i].key, rec.Key, "record %d", i)
		assert.Equal(t, want[i].result, rec.Result, "record %d", i)
		if want[i].holder == "" {
			assert.Empty(t, rec.Holder, "record %d", i)
		} else {
			assert.Regexp(t, want[i].holder, rec.Holder, "record %d names the holder it cut off", i)
		}
		if rec.Action == audit.ActionReleaseOwner {
			require.Len(t, rec.Locks, 1, "a release of an owner's locks names each lock it deleted")
			assert.Equal(t, "c", rec.Locks[0].Key)
			assert.Equal(t, "o1", rec.Locks[0].Owner)
			assert.Regexp(t, cutOff, rec.Locks[0].Holder, "and the holder it cut off")
		} else {
			assert.Empty(t, rec.Locks, "record %d", i)
		}
		assert.Equal(t, "ana@ops", rec.Operator)
		assert.Equal(t, "redis://x", rec.Server)
		assert.WithinDuration(t, time.Now(), rec.Time, time.Minute)
	}
	assert.Len(t, readLines(t, path), 6, "the file has them too")
}

func TestReleaserReportsAFailedRecordButReleases(t *testing.T) {
	client := redistest.Start(t).Client(t)
	ctx := t.Context()
	p := provider.New(client, nil)
	require.NoError(t, p.Acquire(ctx, []string{"a"}, provider.AcquireOptions{Owner: "o1"}))
	r := &audit.Releaser{Inspector: operator.New(client, nil), Sink: failingSink{}}
	got := r.ForceReleaseOwner(ctx, "a", "o1", operator.TellHolderFirst)
	assert.Equal(t, 1, got.Count, "the release happened")
	assert.ErrorContains(t, got.AuditErr, "disk full")
	assert.Equal(t, audit.ResultReleased, got.Result())
}

func TestWhereNamesTheTrail(t *testing.T) {
	client := redistest.Start(t).Client(t)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	trail, err := audit.Open(audit.Options{Path: path, Stream: "ops:audit", Client: client})
	require.NoError(t, err)
	t.Cleanup(func() { _ = trail.Close() })
	assert.Equal(t, path+" and Redis stream ops:audit", trail.Where())
	assert.Equal(t, path+" and Redis stream ops:audit", audit.Where(trail))
	assert.Empty(t, audit.Where(failingSink{}))

	_, err = audit.Open(audit.Options{Path: path, Stream: "ops:audit"})
	assert.Error(t, err, "a stream needs a client")
}

func TestOpenWithoutAPathUsesTheDefault(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	trail, err := audit.Open(audit.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = trail.Close() })
	want, err := audit.DefaultPath()
	require.NoError(t, err)
	assert.Equal(t, want, trail.Where())
}

// The console's d releases the hold the operator confirmed and names its holder; a hold its
// owner took since is spared, and the record says nothing was cut off.
func TestForceReleaseHoldRecordsTheHoldSeen(t *testing.T) {
	client := redistest.Start(t).Client(t)
	ctx := t.Context()
	p := provider.New(client, &provider.Options{Holder: provider.Holder{Host: "web-1", PID: 4242, Program: "medusa-worker"}})
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	trail, err := audit.Open(audit.Options{Path: path})
	require.NoError(t, err)
	t.Cleanup(func() { _ = trail.Close() })
	r := &audit.Releaser{Inspector: operator.New(client, nil), Sink: trail}
	read := func() operator.Lock {
		t.Helper()
		l, ok, err := r.Inspector.Get(ctx, "a")
		require.NoError(t, err)
		require.True(t, ok)
		return l
	}

	require.NoError(t, p.Acquire(ctx, []string{"a"}, provider.AcquireOptions{Owner: "shared"}))
	stale := read()
	ok, err := p.Release(ctx, []string{"a"}, "shared")
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, p.Acquire(ctx, []string{"a"}, provider.AcquireOptions{Owner: "shared"}))
	assert.Equal(t, audit.Released{Count: 0, Owner: "shared"}, brief(r.ForceReleaseHold(ctx, stale, operator.TellHolderFirst)), "the owner's new hold stays")
	current := read()
	assert.Equal(t, audit.Released{Count: 1, How: operator.Freed, Owner: "shared"}, brief(r.ForceReleaseHold(ctx, current, operator.TellHolderFirst)))

	recs := readLines(t, path)
	require.Len(t, recs, 2)
	spared, cut := recs[0], recs[1]
	assert.Equal(t, audit.ResultNotHeld, spared.Result)
	assert.Empty(t, spared.Holder, "nothing was cut off")
	assert.Equal(t, audit.ResultReleased, cut.Result)
	assert.Equal(t, current.Record.String(), cut.Holder, "the holder of the hold released, with its token")
}

// A release of more locks than one record holds writes its record in parts, each naming at
// most LocksPerRecord locks; the last part has the rest, the outcome and the count of all.
func TestReleaseOwnerWritesALargeReleaseInParts(t *testing.T) {
	client := redistest.Start(t).Client(t)
	ctx := t.Context()
	p := provider.New(client, nil)
	keys := []string{"a", "b", "c", "d", "e"}
	require.NoError(t, p.Acquire(ctx, keys, provider.AcquireOptions{Owner: "o"}))
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	trail, err := audit.Open(audit.Options{Path: path, Stream: "audit:test", Client: client})
	require.NoError(t, err)
	t.Cleanup(func() { _ = trail.Close() })
	r := &audit.Releaser{Inspector: operator.New(client, nil), Sink: trail, LocksPerRecord: 2}

	assert.Equal(t, audit.Released{Count: 5, Owner: "o"}, r.ReleaseOwner(ctx, "o", operator.TellHolderFirst))

	entries, err := client.XRange(ctx, "audit:test", "-", "+").Result()
	require.NoError(t, err)
	var fromStream []audit.Record
	for _, e := range entries {
		rec, err := audit.FromStream(e.Values)
		require.NoError(t, err)
		fromStream = append(fromStream, rec)
	}
	for where, recs := range map[string][]audit.Record{"stream": fromStream, "file": readLines(t, path)} {
		require.Len(t, recs, 3, where)
		var named []string
		for i, rec := range recs {
			assert.Equal(t, i+1, rec.Part, "%s record %d", where, i)
			assert.Equal(t, audit.ActionReleaseOwner, rec.Action)
			assert.Equal(t, audit.ResultReleased, rec.Result)
			assert.LessOrEqual(t, len(rec.Locks), 2)
			for _, l := range rec.Locks {
				named = append(named, l.Key)
			}
		}
		assert.Equal(t, []int{2, 2, 5}, []int{recs[0].Count, recs[1].Count, recs[2].Count}, "%s: the last part counts all", where)
		assert.ElementsMatch(t, keys, named, "%s: every lock is named once", where)
	}

	// Exactly LocksPerRecord locks are one record, not a full part and an empty one.
	require.NoError(t, p.Acquire(ctx, []string{"x", "y"}, provider.AcquireOptions{Owner: "o2"}))
	assert.Equal(t, audit.Released{Count: 2, Owner: "o2"}, r.ReleaseOwner(ctx, "o2", operator.TellHolderFirst))
	recs := readLines(t, path)
	require.Len(t, recs, 4)
	assert.Zero(t, recs[3].Part)
	assert.Len(t, recs[3].Locks, 2)
}

// brief is a force-release's outcome without the holder it names (the record's text, checked
// where it matters).
func brief(r audit.Released) audit.Released {
	r.Holder = ""
	return r
}
