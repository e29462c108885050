package provider_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
)

// wait bounds every "eventually" in the suite. It only stops a broken test from hanging; no test
// asserts that something is fast.
const wait = 10 * time.Second

// poll is the tick of require.Eventually.
const poll = 5 * time.Millisecond

// env is one test's view of a Redis: a provider in a fresh namespace, the client the provider
// uses (hooks go there), a separate raw client for assertions on the stored keys, and an
// operator's Inspector on the raw client (to read what the provider wrote, and to force-release
// as an operator's tool in another process does).
type env struct {
	t   *testing.T
	srv *redistest.Server
	p   *provider.Provider
	ops *operator.Inspector
	pc  *redis.Client // the provider's client
	rdb *redis.Client // raw client, never hooked
	ns  string
}

// freshNamespace returns a namespace no other test uses.
func freshNamespace(t *testing.T) string { return redistest.Namespace(t, "t") }

// newEnv returns a provider on the shared server in a fresh namespace; opts may be nil and its
// Namespace, when empty, is set to the fresh one.
func newEnv(t *testing.T, opts *provider.Options) *env {
	t.Helper()
	return newEnvOn(t, shared, opts)
}

// newEnvOn is newEnv on a given server.
func newEnvOn(t *testing.T, srv *redistest.Server, opts *provider.Options) *env {
	t.Helper()
	var o provider.Options
	if opts != nil {
		o = *opts
	}
	if o.Namespace == "" {
		o.Namespace = freshNamespace(t)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	pc, rdb := srv.Client(t), srv.Client(t)
	return &env{t: t, srv: srv, p: newProvider(t, pc, &o), ops: operator.New(rdb, &operator.Options{Namespace: o.Namespace}),
		pc: pc, rdb: rdb, ns: o.Namespace}
}

// noLeaks checks, when the test ends (after its other cleanups), that no goroutine it started is
// still running. Only for tests that do not call t.Parallel.
func noLeaks(t *testing.T) {
	t.Helper()
	opts := append([]goleak.Option{goleak.IgnoreCurrent()}, leakOptions...)
	t.Cleanup(func() { goleak.VerifyNone(t, opts...) })
}

// ctx returns a test context bounded by wait, so a broken test fails instead of hanging.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), wait)
	t.Cleanup(cancel)
	return c
}

func (e *env) key(k string) string { return e.ns + k }

// awaitDone waits for the lease to end; a lease that never ends fails the test.
func awaitDone(t *testing.T, l *provider.Lease) {
	t.Helper()
	select {
	case <-l.Done():
	case <-time.After(wait):
		t.Fatal("the lease did not end")
	}
}

// awaitHearing waits until p's listener is up and has run the check of l's keys that its first
// subscription makes: a change to the keys after it is heard as that change, not found by that
// check (whose loss would carry stock's message).
func awaitHearing(t *testing.T, p *provider.Provider, l *provider.Lease) {
	t.Helper()
	require.Eventually(t, func() bool { return provider.WakeupsLive(p) && provider.ChecksRun(l) > 0 }, wait, time.Millisecond,
		"the holder's listener is up and has checked the lease")
}

// owner returns the stored value of lock key k and whether it exists.
func (e *env) owner(k string) (string, bool) {
	e.t.Helper()
	v, err := e.rdb.Get(context.Background(), e.key(k)).Result()
	if errors.Is(err, redis.Nil) {
		return "", false
	}
	require.NoError(e.t, err)
	return v, true
}

// requireOwner asserts that lock key k is held by owner.
func (e *env) requireOwner(k, owner string) {
	e.t.Helper()
	got, ok := e.owner(k)
	require.True(e.t, ok, "key %q should be held by %q but is free", k, owner)
	require.Equal(e.t, owner, got, "owner of %q", k)
}

// requireFree asserts that lock key k does not exist.
func (e *env) requireFree(k string) {
	e.t.Helper()
	got, ok := e.owner(k)
	require.False(e.t, ok, "key %q should be free but is held by %q", k, got)
}

// ttl returns the raw TTL of lock key k in whole seconds (-1 persistent, -2 missing).
func (e *env) ttl(k string) int64 {
	e.t.Helper()
	d, err := e.rdb.TTL(context.Background(), e.key(k)).Result()
	require.NoError(e.t, err)
	if d < 0 {
		return int64(d) // -1 or -2, not scaled by go-redis
	}
	return int64(d / time.Second)
}

// set stores a lock the way another process would: SET ns+k owner [EX].
func (e *env) set(k, owner string, ttl time.Duration) {
	e.t.Helper()
	require.NoError(e.t, e.rdb.Set(context.Background(), e.key(k), owner, ttl).Err())
}

// fill sets n locks "<prefix>NNN" (NNN from 000) owned by owner, without expiry, in one
// pipeline: enough keys for several SCAN batches.
func (e *env) fill(prefix, owner string, n int) {
	e.t.Helper()
	pipe := e.rdb.Pipeline()
	for i := range n {
		pipe.Set(context.Background(), e.key(fmt.Sprintf("%s%03d", prefix, i)), owner, 0)
	}
	_, err := pipe.Exec(context.Background())
	require.NoError(e.t, err)
}

// scriptNames maps the SHA1 of each Lua script, as EVALSHA sends it, to its file's base name.
var scriptNames = func() map[string]string {
	names := map[string]string{}
	for name, sha := range provider.ScriptSHAs {
		names[sha] = name
	}
	return names
}()

// shaOf returns the SHA1 (hex) of one embedded script, as EVALSHA sends it.
func shaOf(script string) string {
	for sha, name := range scriptNames {
		if name == script {
			return sha
		}
	}
	panic("no script " + script)
}

// scriptCall is one script run the provider sent: EVALSHA or EVAL of one of its scripts.
type scriptCall struct {
	Script string // acquire, extend, release, giveback, claimed or revoke
	Key    string // full Redis key of the lock (KEYS[1]; KEYS[2] is its holder record)
	Args   []string
	At     time.Time // when it was sent
}

// recorder records the provider's script calls (NOSCRIPT replies, which the provider retries
// with EVAL, are not recorded) and can fail chosen calls.
type recorder struct{ *redistest.Recorder }

func record(e *env) *recorder {
	r := &recorder{&redistest.Recorder{}}
	e.pc.AddHook(r.Recorder)
	return r
}

// toCall reads cmd as a call of one of the provider's scripts, sent at at.
func toCall(cmd redis.Cmder, at time.Time) (scriptCall, bool) {
	args := cmd.Args()
	name := strings.ToLower(fmt.Sprint(args[0]))
	if (name != "evalsha" && name != "eval") || len(args) < 4 {
		return scriptCall{}, false
	}
	id := fmt.Sprint(args[1])
	if name == "eval" {
		sum := sha1.Sum([]byte(id))
		id = hex.EncodeToString(sum[:])
	}
	numKeys, err := strconv.Atoi(fmt.Sprint(args[2]))
	if err != nil || len(args) < 3+numKeys {
		return scriptCall{}, false
	}
	c := scriptCall{Script: scriptNames[id], Key: fmt.Sprint(args[3]), At: at}
	for _, a := range args[3+numKeys:] {
		c.Args = append(c.Args, fmt.Sprint(a))
	}
	return c, true
}

// of returns the answered calls of one script.
func (r *recorder) of(script string) []scriptCall {
	var out []scriptCall
	for _, call := range r.Calls() {
		if call.Replied.IsZero() || redis.HasErrorPrefix(call.Err, "NOSCRIPT") {
			continue
		}
		c, ok := toCall(call.Cmd, call.Sent)
		if !ok {
			continue
		}
		name := c.Script
		if name == "extend" && slices.Contains(c.Args, "check") {
			name = "check" // extend.lua's check of a lease's keys (hear.go): not a renewal
		}
		if name == script {
			out = append(out, c)
		}
	}
	return out
}

// setFail has f asked before each script call is sent (nil: none is); it may block (on ctx,
// like a client that honours deadlines), and a non-nil error fails every command of its
// pipeline, unsent, as a broken connection would.
func (r *recorder) setFail(f func(context.Context, scriptCall) error) {
	if f == nil {
		r.BeforeSend(nil)
		return
	}
	r.BeforeSend(func(ctx context.Context, cmd redis.Cmder) error {
		if c, ok := toCall(cmd, time.Now()); ok {
			return f(ctx, c)
		}
		return nil
	})
}

// setAfter has f asked about each script call once it ran (nil: none is; a NOSCRIPT reply is
// not asked about); a non-nil error replaces the replies of its pipeline, as a reply lost on the
// way back would.
func (r *recorder) setAfter(f func(context.Context, scriptCall) error) {
	if f == nil {
		r.AfterReply(nil)
		return
	}
	r.AfterReply(func(ctx context.Context, cmd redis.Cmder) error {
		if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			return nil
		}
		if c, ok := toCall(cmd, time.Now()); ok {
			return f(ctx, c)
		}
		return nil
	})
}

// waker records the waits the provider asks for and returns at once, so backoff tests take no
// time. onWait, when set, runs on each wait with its 1-based number.
type waker struct {
	mu     sync.Mutex
	waits  []time.Duration
	keys   []string
	onWait func(n int)
}

func (w *waker) Wait(_ context.Context, redisKey string, d time.Duration) {
	w.mu.Lock()
	w.waits = append(w.waits, d)
	w.keys = append(w.keys, redisKey)
	n := len(w.waits)
	on := w.onWait
	w.mu.Unlock()
	if on != nil {
		on(n)
	}
}

func (w *waker) recorded() ([]time.Duration, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.waits...), append([]string(nil), w.keys...)
}

// events collects what an Observer receives.
type events struct {
	mu  sync.Mutex
	all []provider.Event
}

func (o *events) LockEvent(e provider.Event) {
	o.mu.Lock()
	o.all = append(o.all, e)
	o.mu.Unlock()
}

// kinds returns the kinds received for key, in order.
func (o *events) kinds(key string) []provider.EventKind {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []provider.EventKind
	for _, e := range o.all {
		if e.Key == key {
			out = append(out, e.Kind)
		}
	}
	return out
}

func (o *events) of(kind provider.EventKind) []provider.Event {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []provider.Event
	for _, e := range o.all {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// logSink collects log messages.
type logSink struct {
	mu   sync.Mutex
	msgs []string
}

func (s *logSink) logger() *slog.Logger { return slog.New(s) }

func (s *logSink) Enabled(context.Context, slog.Level) bool { return true }

func (s *logSink) Handle(_ context.Context, r slog.Record) error {
	s.mu.Lock()
	s.msgs = append(s.msgs, r.Message)
	s.mu.Unlock()
	return nil
}

func (s *logSink) WithAttrs([]slog.Attr) slog.Handler { return s }

func (s *logSink) WithGroup(string) slog.Handler { return s }

func (s *logSink) messages() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.msgs...)
}

// conflict asserts that err is a *provider.ConflictError of the given kind and message.
func conflict(t *testing.T, err error, kind error, msg string) *provider.ConflictError {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, kind)
	var ce *provider.ConflictError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, msg, err.Error())
	require.Equal(t, "conflict", ce.Type())
	return ce
}

// notAcquiredMsg is stock's message for a held key.
func notAcquiredMsg(key string) string { return `Failed to acquire lock for key "` + key + `"` }

// timedOutMsg is stock's message for an Execute that did not get its keys in time.
const timedOutMsg = "Timed-out acquiring lock."

// didRelease is a force-release's outcome as "did it do anything" (Revocation.Done).
func didRelease(r operator.Revocation, err error) (bool, error) { return r.Done(), err }

// didReleaseAny is didRelease for ForceReleaseAny.
func didReleaseAny(owner string, r operator.Revocation, err error) (string, bool, error) {
	return owner, r.Done(), err
}

// seen reads lock k as the console shows it: the hold an operator decides to force-release.
func (e *env) seen(k string) operator.Lock {
	e.t.Helper()
	l, ok, err := e.ops.Get(ctx(e.t), k)
	require.NoError(e.t, err)
	require.True(e.t, ok, "%q is held", k)
	return l
}

// stockTake takes lock key k for owner as stock Medusa does: SET key owner NX [EX secs] (0: no
// expiry). Stock writes no holder record and touches none.
func (e *env) stockTake(k, owner string, secs int) {
	e.t.Helper()
	args := []any{"SET", e.key(k), owner, "NX"}
	if secs > 0 {
		args = append(args, "EX", secs)
	}
	require.NoError(e.t, e.rdb.Do(context.Background(), args...).Err(), "stock's SET NX of %q", k)
}

// requireNoRecord asserts that an operator reads lock key k without a holder record.
func (e *env) requireNoRecord(k string) {
	e.t.Helper()
	require.Nil(e.t, e.seen(k).Record, "no holder record for %q", k)
}

// newProvider is provider.New, closed when the test ends (its wake-up listener lingers after
// its last lease otherwise: see Provider.Close).
func newProvider(t testing.TB, c redis.UniversalClient, opts *provider.Options) *provider.Provider {
	p := provider.New(c, opts)
	t.Cleanup(p.Close)
	return p
}

// opsOf is an operator's Inspector on p's client and namespace: what a console watching p sees.
func opsOf(p *provider.Provider) *operator.Inspector {
	return operator.New(p.Client(), &operator.Options{Namespace: p.Namespace()})
}
