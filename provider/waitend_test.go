package provider_test

// The error contract of a wait: every wait that ends without its keys returns a
// *provider.ConflictError (stock's message) that also matches what ended it, on every path.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locktui/locktui/provider"
	"github.com/stretchr/testify/require"
)

// errShutdown stands for a caller's own cause, such as a server shutting down.
var errShutdown = errors.New("test: shutting down")

// parkWaker parks every wait until its context ends, telling parked about the first.
type parkWaker struct{ parked chan struct{} }

func (w parkWaker) Wait(ctx context.Context, _ string, _ time.Duration) {
	select {
	case w.parked <- struct{}{}:
	default:
	}
	<-ctx.Done()
}

// instantWaker ends every wait at once.
type instantWaker struct{}

func (instantWaker) Wait(context.Context, string, time.Duration) {}

// waitCall is one API that waits for keys.
type waitCall struct {
	name string
	// ownTimeout: the call has a timeout of its own (timeout), which ends it with ErrTimedOut.
	ownTimeout bool
	run        func(c context.Context, p *provider.Provider, keys []string, timeout time.Duration) error
}

var waitCalls = []waitCall{
	{name: "acquire queued", run: func(c context.Context, p *provider.Provider, keys []string, _ time.Duration) error {
		return p.Acquire(c, keys, provider.AcquireOptions{Owner: "me", AwaitQueue: true, Expire: time.Minute})
	}},
	{name: "lease", ownTimeout: true, run: func(c context.Context, p *provider.Provider, keys []string, timeout time.Duration) error {
		l, err := p.AcquireLease(c, keys, provider.LeaseOptions{Timeout: timeout})
		if err == nil {
			_, _ = l.Release(context.Background())
		}
		return err
	}},
	{name: "execute", ownTimeout: true, run: func(c context.Context, p *provider.Provider, keys []string, timeout time.Duration) error {
		return p.Execute(c, keys, func(context.Context) error { return errors.New("the job must not run") },
			provider.ExecuteOptions{Timeout: timeout})
	}},
}

// waitRun is one run of a waitCall on keys "b" (held by someone else) and "a" (free).
type waitRun struct {
	t        *testing.T
	e        *env
	rec      *recorder
	parked   chan struct{} // the first wait for "b" began (parkWaker)
	inFlight chan struct{} // the retry of "b" is in flight (inCall ends)
	call     waitCall
}

// start runs the call with c and its own timeout.
func (r *waitRun) start(c context.Context, timeout time.Duration) <-chan error {
	done := make(chan error, 1)
	go func() { done <- r.call.run(c, r.e.P, []string{"b", "a"}, timeout) }()
	return done
}

// await waits for ch, failing the test after wait.
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(wait):
		t.Fatal(what)
	}
}

// waitEnd is one way a wait ends; end runs the call, ends its wait and returns the call's error
// and what else it must match besides the conflict.
type waitEnd struct {
	name string
	// own: the call's own timeout ends the wait (only for calls that have one).
	own bool
	// inCall: the wait ends while a retry is in flight in Redis (the Waker returns at once and
	// the retry of "b" blocks until its context ends, like a client that honours contexts).
	inCall bool
	// key is the key the conflict names: the one the call was trying.
	key string
	end func(r *waitRun) (err, cause error)
}

var waitEnds = []waitEnd{
	{name: "its own timeout", own: true, key: "b", end: func(r *waitRun) (error, error) {
		return <-r.start(ctx(r.t), 50*time.Millisecond), context.DeadlineExceeded
	}},
	{name: "the caller's deadline", key: "b", end: func(r *waitRun) (error, error) {
		c, cancel := context.WithTimeout(ctx(r.t), 50*time.Millisecond)
		defer cancel()
		return <-r.start(c, time.Hour), context.DeadlineExceeded
	}},
	{name: "cancelled while it sleeps", key: "b", end: func(r *waitRun) (error, error) {
		c, cancel := context.WithCancel(ctx(r.t))
		done := r.start(c, time.Hour)
		await(r.t, r.parked, "the call never waited")
		cancel()
		return <-done, context.Canceled
	}},
	{name: "cancelled with a cause", key: "b", end: func(r *waitRun) (error, error) {
		c, cancel := context.WithCancelCause(ctx(r.t))
		done := r.start(c, time.Hour)
		await(r.t, r.parked, "the call never waited")
		cancel(errShutdown)
		return <-done, errShutdown
	}},
	{name: "cancelled during a Redis call", inCall: true, key: "b", end: func(r *waitRun) (error, error) {
		c, cancel := context.WithCancelCause(ctx(r.t))
		done := r.start(c, time.Hour)
		await(r.t, r.inFlight, "the retry was never sent")
		cancel(errShutdown)
		return <-done, errShutdown
	}},
	{name: "cancelled before it starts", key: "a", end: func(r *waitRun) (error, error) {
		c, cancel := context.WithCancelCause(ctx(r.t))
		cancel(errShutdown)
		return <-r.start(c, time.Hour), errShutdown
	}},
}

// newWaitRun prepares a run of call ended by end.
func newWaitRun(t *testing.T, call waitCall, end waitEnd) *waitRun {
	r := &waitRun{t: t, call: call, parked: make(chan struct{}, 1), inFlight: make(chan struct{})}
	var waker provider.Waker = parkWaker{parked: r.parked}
	if end.inCall {
		waker = instantWaker{}
	}
	r.e = newEnv(t, &provider.Options{Waker: waker})
	r.e.Set("b", "other", 0)
	r.rec = record(r.e)
	if end.inCall {
		r.rec.setFail(func(c context.Context, sc scriptCall) error {
			// The first attempt sent "a" and "b" together; the next one on "b" is the retry.
			if sc.Script != "acquire" || sc.Key != r.e.Key("b") || len(r.rec.of("acquire")) < 2 {
				return nil
			}
			r.rec.setFail(nil)
			close(r.inFlight)
			<-c.Done()
			return c.Err()
		})
	}
	return r
}

// Every wait that ends without the keys, however it ends, is a conflict with stock's message:
// "Timed-out acquiring lock." when a lease's or Execute's own timeout passed (matching
// context.DeadlineExceeded too), else `Failed to acquire lock for key "<the key it was trying>"`,
// matching what ended it (context.Canceled, the caller's cause, context.DeadlineExceeded).
// Nothing the call took is left behind.
func TestEveryEndedWaitIsAConflictWithItsCause(t *testing.T) {
	for _, call := range waitCalls {
		for _, end := range waitEnds {
			if end.own && !call.ownTimeout {
				continue
			}
			t.Run(call.name+"/"+end.name, func(t *testing.T) {
				r := newWaitRun(t, call, end)
				err, cause := end.end(r)
				if end.own {
					ce := conflict(t, err, provider.ErrTimedOut, timedOutMsg)
					require.Equal(t, []string{"a", "b"}, ce.Keys)
					require.NotErrorIs(t, err, provider.ErrNotAcquired)
				} else {
					ce := conflict(t, err, provider.ErrNotAcquired, notAcquiredMsg(end.key))
					require.Equal(t, []string{end.key}, ce.Keys)
					require.NotErrorIs(t, err, provider.ErrTimedOut)
				}
				require.ErrorIs(t, err, cause)
				require.NotErrorIs(t, err, provider.ErrOutcomeUnknown)
				r.e.RequireFree("a")
				r.e.RequireOwner("b", "other")
			})
		}
	}
}

// A wait that ends without its keys and then cannot give back what it took (Redis fails the
// give-back) says both: it matches the conflict that ended it (first in the chain), its cause,
// ErrOutcomeUnknown and Redis's error, and names the keys that may still be held.
func TestEndedWaitWhoseGiveBackFailsSaysBoth(t *testing.T) {
	broken := errors.New("test: connection reset")
	for _, call := range waitCalls {
		for _, end := range waitEnds[:3] { // its own timeout, the caller's deadline, cancelled
			if end.own && !call.ownTimeout {
				continue
			}
			t.Run(call.name+"/"+end.name, func(t *testing.T) {
				r := newWaitRun(t, call, end)
				r.rec.setFail(func(_ context.Context, sc scriptCall) error {
					if sc.Script == "giveback" {
						return broken
					}
					return nil
				})
				err, cause := end.end(r)
				kind := provider.ErrNotAcquired
				if end.own {
					kind = provider.ErrTimedOut
				}
				for _, want := range []error{kind, cause, provider.ErrOutcomeUnknown, broken} {
					require.ErrorIs(t, err, want)
				}
				var ce *provider.ConflictError
				require.ErrorAs(t, err, &ce)
				require.Equal(t, kind, ce.Kind, "the first conflict in the chain is the one that ended the wait: %v", err)
				require.ErrorContains(t, err, `"a"`)
				require.ErrorContains(t, err, "may still be held")
			})
		}
	}
}

// A lease granted too late (its reply came after its deadline) is given back and tried again;
// when the caller's context ends meanwhile, the call ends as any cut-short wait does: a conflict
// on the first key, matching the caller's cause.
func TestLateGrantEndedByTheCallerIsAConflict(t *testing.T) {
	e := newEnv(t, nil)
	rec := record(e)
	c, cancel := context.WithCancelCause(ctx(t))
	defer cancel(nil)
	rec.setAfter(func(_ context.Context, sc scriptCall) error {
		if sc.Script == "acquire" {
			time.Sleep(time.Second) // past the deadline of a 1 s lease (900 ms)
			cancel(errShutdown)
		}
		return nil
	})
	_, err := e.P.AcquireLease(c, []string{"b", "a"}, provider.LeaseOptions{Expire: time.Second, Timeout: time.Hour})
	conflict(t, err, provider.ErrNotAcquired, notAcquiredMsg("a"))
	require.ErrorIs(t, err, errShutdown)
	require.NotEmpty(t, rec.of("giveback"), "the late grant was given back")
	e.RequireFree("a")
	e.RequireFree("b")
}
