package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/audit"
	"github.com/locktui/locktui/internal/cli"
	"github.com/locktui/locktui/provider"
)

// readAudit returns the records of an audit file, with their times checked and zeroed.
func readAudit(t *testing.T, path string) []audit.Record {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []audit.Record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r audit.Record
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r), "line %q", sc.Text())
		require.WithinDuration(t, time.Now(), r.Time, time.Minute)
		r.Time = time.Time{}
		out = append(out, cutOff(t, r))
	}
	require.NoError(t, sc.Err())
	return out
}

// streamAudit returns the records of an audit stream, with their times zeroed.
func (e *env) streamAudit(t *testing.T, name string) []audit.Record {
	t.Helper()
	entries, err := e.srv.Client(t).XRange(context.Background(), name, "-", "+").Result()
	require.NoError(t, err)
	var out []audit.Record
	for _, en := range entries {
		r, err := audit.FromStream(en.Values)
		require.NoError(t, err)
		r.Time = time.Time{}
		out = append(out, cutOff(t, r))
	}
	return out
}

// holderCutOff stands for the holder a record names (its time and token vary).
const holderCutOff = "(the holder cut off)"

// cutOff checks the holders r names, if any, and replaces them with holderCutOff; the locks a
// release of an owner's locks names are sorted by key (SCAN's order varies).
func cutOff(t *testing.T, r audit.Record) audit.Record {
	t.Helper()
	const holder = `^cli\.test \(pid \d+ on .+, go client\), held since \S+, fencing token \d+$`
	if r.Holder != "" {
		require.Regexp(t, holder, r.Holder)
		r.Holder = holderCutOff
	}
	for i := range r.Locks {
		require.Regexp(t, holder, r.Locks[i].Holder)
		r.Locks[i].Holder = holderCutOff
	}
	slices.SortFunc(r.Locks, func(a, b audit.LockReleased) int { return strings.Compare(a.Key, b.Key) })
	return r
}

// rec is the record a command against e writes, without its time: a force-release that
// released a lock of e.p names the holder it cut off.
func (e *env) rec(action, key, owner, result string, count int) audit.Record {
	r := audit.Record{Operator: audit.Operator(), Action: action, Key: key, Owner: owner,
		Result: result, Count: count, Namespace: provider.DefaultNamespace, Server: e.srv.URL}
	if action != audit.ActionReleaseOwner && result == audit.ResultReleased {
		r.Holder = holderCutOff
	}
	r.Mode = audit.ModeTellFirst
	return r
}

func TestReleaseForceIsAudited(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	require.NoError(t, e.p.Acquire(ctx, []string{"a"}, provider.AcquireOptions{Owner: "o1", Expire: time.Minute}))
	require.NoError(t, e.srv.Client(t).HSet(ctx, "medusa_lock:hash", "f", "v").Err())
	log := filepath.Join(t.TempDir(), "audit", "trail.jsonl")

	r := run(t, "release", "--force", "a", "gone", "hash", "a", "--redis", e.srv.URL,
		"--audit-log", log, "--audit-stream", "ops:audit")
	requireCode(t, r, cli.ExitConflict)
	want := []audit.Record{
		e.rec(audit.ActionForceReleaseAny, "a", "o1", audit.ResultReleased, 1),
		e.rec(audit.ActionForceReleaseAny, "gone", "", audit.ResultNotHeld, 0),
		e.rec(audit.ActionForceReleaseAny, "hash", "", audit.ResultNotHeld, 0),
	}
	require.Equal(t, want, readAudit(t, log), "one record per distinct key")
	require.Equal(t, want, e.streamAudit(t, "ops:audit"))
}

func TestReleaseOwnerIsAudited(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	require.NoError(t, e.p.Acquire(ctx, []string{"a"}, provider.AcquireOptions{Owner: "o1", Expire: time.Minute}))
	require.NoError(t, e.p.Acquire(ctx, []string{"x"}, provider.AcquireOptions{Owner: "o2", Expire: time.Minute}))
	log := filepath.Join(t.TempDir(), "trail.jsonl")

	r := run(t, "release", "a", "x", "--owner", "o1", "--redis", e.srv.URL, "--audit-log="+log)
	requireCode(t, r, cli.ExitConflict)
	require.Equal(t, []audit.Record{
		e.rec(audit.ActionForceRelease, "a", "o1", audit.ResultReleased, 1),
		e.rec(audit.ActionForceRelease, "x", "o1", audit.ResultNotHeld, 0),
	}, readAudit(t, log))
	require.Equal(t, "o2", e.holder(t, "x"))
}

func TestReleaseAllIsAudited(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, e.p.Acquire(context.Background(), []string{"a", "b"}, provider.AcquireOptions{Owner: "o1", Expire: time.Minute}))
	log := filepath.Join(t.TempDir(), "trail.jsonl")

	// The audit flags may come before the command, like every other flag.
	requireCode(t, run(t, "--audit-log", log, "--audit-stream", "ops:audit", "release-all", "--owner", "o1", "--redis", e.srv.URL), cli.ExitOK)
	requireCode(t, run(t, "release-all", "--owner", "o1", "--redis", e.srv.URL, "--audit-log", log), cli.ExitOK)
	released := e.rec(audit.ActionReleaseOwner, "", "o1", audit.ResultReleased, 2)
	released.Locks = []audit.LockReleased{{Key: "a", Owner: "o1", Holder: holderCutOff}, {Key: "b", Owner: "o1", Holder: holderCutOff}}
	require.Equal(t, []audit.Record{
		released,
		e.rec(audit.ActionReleaseOwner, "", "o1", audit.ResultNotHeld, 0),
	}, readAudit(t, log), "the record names each lock released and the holder it cut off")
	require.Equal(t, []audit.Record{released}, e.streamAudit(t, "ops:audit"))
}

// Without --audit-log the records go where the console writes them (under XDG_STATE_HOME, here
// a scratch directory of the test's own).
func TestAuditDefaultPath(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir()) // a trail of its own, also under -count=N
	e := newEnv(t)
	require.NoError(t, e.p.Acquire(context.Background(), []string{"default-path"}, provider.AcquireOptions{Owner: "o", Expire: time.Minute}))
	requireCode(t, run(t, "release", "default-path", "--force", "--redis", e.srv.URL), cli.ExitOK)
	path, err := audit.DefaultPath()
	require.NoError(t, err)
	require.Contains(t, readAudit(t, path), e.rec(audit.ActionForceReleaseAny, "default-path", "o", audit.ResultReleased, 1))
}

// A record that cannot be written after the release happened is a warning on stderr; the exit
// code still tells what happened to the locks.
func TestAuditWriteFailureAfterReleaseWarns(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	require.NoError(t, e.p.Acquire(ctx, []string{"a"}, provider.AcquireOptions{Owner: "o1", Expire: time.Minute}))
	require.NoError(t, e.srv.Client(t).Set(ctx, "not-a-stream", "x", 0).Err()) // XADD fails: WRONGTYPE
	log := filepath.Join(t.TempDir(), "trail.jsonl")

	r := run(t, "release", "a", "--force", "--redis", e.srv.URL, "--audit-log", log, "--audit-stream", "not-a-stream")
	requireCode(t, r, cli.ExitOK)
	require.Equal(t, "released \"a\" (owner \"o1\")\n", r.stdout)
	requireOneErrorLine(t, r, "warning:", `could not audit force_release_any of "a" (released)`, "WRONGTYPE")
	require.Empty(t, e.holder(t, "a"))
	require.Len(t, readAudit(t, log), 1, "the sinks that work still get the record")

	r = run(t, "release-all", "--owner", "o1", "--redis", e.srv.URL, "--audit-stream", "not-a-stream", "--audit-log", log)
	requireCode(t, r, cli.ExitOK)
	requireOneErrorLine(t, r, "warning:", `could not audit release_owner of owner "o1" (not_held)`)
}

// An audit trail that cannot be opened stops the command before it changes anything.
func TestAuditUnusableRefusesToRelease(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, e.p.Acquire(context.Background(), []string{"a"}, provider.AcquireOptions{Owner: "o1", Expire: time.Minute}))
	blocker := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o600))
	for _, args := range [][]string{
		{"release", "a", "--force"},
		{"release", "a", "--owner", "o1"},
		{"release-all", "--owner", "o1"},
	} {
		r := run(t, append(args, "--redis", e.srv.URL, "--audit-log", filepath.Join(blocker, "trail.jsonl"))...)
		requireCode(t, r, cli.ExitError)
		require.Empty(t, r.stdout)
		requireOneErrorLine(t, r, "audit log", blocker, "--audit-log")
		require.Equal(t, "o1", e.holder(t, "a"), "nothing is released without a trail")
	}
}
