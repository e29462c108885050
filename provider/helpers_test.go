package provider_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
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

	"github.com/locktui/locktui/internal/testsupport/locktest"
	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
)

// wait and poll bound the suite's waits (locktest.Wait, locktest.Poll).
const wait, poll = locktest.Wait, locktest.Poll

// ctx is locktest.Ctx: a test context bounded by wait.
func ctx(t *testing.T) context.Context { return locktest.Ctx(t) }

// env is one test's view of a Redis (locktest.Env): a provider in a fresh namespace and the
// client it uses (hooks go there: PC), an operator's Inspector on a client of its own (to read
// what the provider wrote, and to force-release as an operator's tool in another process does),
// and a raw client for assertions on the stored keys.
type env struct{ *locktest.Env }

// newEnv returns a provider on the shared server in a fresh namespace; opts may be nil and its
// Namespace, when empty, is set to the fresh one.
func newEnv(t *testing.T, opts *provider.Options) *env {
	t.Helper()
	return newEnvOn(t, shared, opts)
}

// newEnvOn is newEnv on a given server.
func newEnvOn(t *testing.T, srv *redistest.Server, opts *provider.Options) *env {
	t.Helper()
	return &env{locktest.New(t, srv, opts)}
}

// noLeaks checks, when the test ends (after its other cleanups), that no goroutine it started is
// still running. Only for tests that do not call t.Parallel.
func noLeaks(t *testing.T) {
	t.Helper()
	opts := append([]goleak.Option{goleak.IgnoreCurrent()}, leakOptions...)
	t.Cleanup(func() { goleak.VerifyNone(t, opts...) })
}

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

// ttl returns the raw TTL of lock key k in whole seconds (-1 persistent, -2 missing).
func (e *env) ttl(k string) int64 {
	e.T.Helper()
	d, err := e.RDB.TTL(context.Background(), e.Key(k)).Result()
	require.NoError(e.T, err)
	if d < 0 {
		return int64(d) // -1 or -2, not scaled by go-redis
	}
	return int64(d / time.Second)
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
	e.PC.AddHook(r.Recorder)
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

// requireNoRecord asserts that an operator reads lock key k without a holder record.
func (e *env) requireNoRecord(k string) {
	e.T.Helper()
	require.Nil(e.T, e.Seen(k).Record, "no holder record for %q", k)
}

// opsOf is an operator's Inspector on p's client and namespace: what a console watching p sees.
func opsOf(p *provider.Provider) *operator.Inspector {
	return operator.New(p.Client(), &operator.Options{Namespace: p.Namespace()})
}
