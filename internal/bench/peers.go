package bench

import (
	"context"
	"crypto/rand"
	_ "embed"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/provider"
)

// The peers: Redis locks from outside this project, measured beside it in the single-process
// scenarios (see Implementations). Each is an Executor on the Go runner's client (redisconn.Open,
// the options the Go provider gets) and runs the same worker loop, so every metric means the
// same for them. An execute obtains the worker's key with the peer's own retry strategy, waiting
// up to the execute's timeout, runs the job and releases the key.
const (
	RedislockName = "redislock"
	RedsyncName   = "redsync"
	BareName      = "bare"
)

// errNotObtained is a peer's execute that gave up waiting: the peers' counterpart of
// provider.ErrTimedOut, counted as a timeout.
var errNotObtained = errors.New("bench: lock not obtained within the timeout")

// PeerImpl runs scenarios in-process with a lock other than the Go provider: the worker loop,
// clients and tallies of GoImpl, with New's Executor in place of the provider.
type PeerImpl struct {
	// ImplName is the name in the report.
	ImplName string
	// New returns the executor of one scenario: c is the lock client, namespace the prefix of
	// its keys (Spec.Namespace).
	New func(c redis.UniversalClient, namespace string) Executor
}

// Name returns ImplName.
func (p PeerImpl) Name() string { return p.ImplName }

// Open connects the lock client and the counter client and checks that Redis answers.
func (p PeerImpl) Open(ctx context.Context, env Env) (Runner, error) {
	return openGoRunner(ctx, p.ImplName, env.RedisURL, func(locks redis.UniversalClient) func(string) Executor {
		return func(namespace string) Executor { return p.New(locks, namespace) }
	})
}

// Peers returns the peers in report order: bsm/redislock, go-redsync and the bare loop.
func Peers() []Impl {
	return []Impl{
		PeerImpl{ImplName: RedislockName, New: newRedislockExec},
		PeerImpl{ImplName: RedsyncName, New: newRedsyncExec},
		PeerImpl{ImplName: BareName, New: newBareExec},
	}
}

// redislockBackoff is redislock's ExponentialBackoff (2^n ms) between these bounds: its
// recommended minimum, and stock's maximum retry interval (stock: 20 ms doubling up to 1 s).
const (
	redislockMinBackoff = 16 * time.Millisecond
	redislockMaxBackoff = time.Second
)

// redislockExec is bsm/redislock: Obtain (a script running SET NX PX) retried with
// ExponentialBackoff until the timeout's deadline, Release (a script: GET, DEL).
type redislockExec struct {
	client    *redislock.Client
	namespace string
}

func newRedislockExec(c redis.UniversalClient, namespace string) Executor {
	return redislockExec{client: redislock.New(c), namespace: namespace}
}

func (e redislockExec) Execute(ctx context.Context, keys []string, job func(context.Context) error, opts provider.ExecuteOptions) error {
	wait, cancel := context.WithTimeout(ctx, opts.Timeout)
	lock, err := e.client.Obtain(wait, e.namespace+keys[0], opts.Expire, &redislock.Options{
		RetryStrategy: redislock.ExponentialBackoff(redislockMinBackoff, redislockMaxBackoff),
	})
	waited := wait.Err() != nil
	cancel()
	if err != nil {
		return gaveUp(ctx, waited, err)
	}
	jobErr := job(ctx)
	return errors.Join(jobErr, lock.Release(context.WithoutCancel(ctx)))
}

// redsyncMinDelay is go-redsync's smallest delay between tries (its default delay is 50–250
// ms at random); the tries are raised from its default 32 so that even at this delay they last
// the whole timeout.
const redsyncMinDelay = 50 * time.Millisecond

// redsyncExec is go-redsync with one pool: a mutex per execute (its own random value), locked
// with LockContext (SET NX PX; a try that fails also runs its delete script) with the default
// delays until the timeout's deadline, unlocked with its delete script (GET, DEL).
type redsyncExec struct {
	rs        *redsync.Redsync
	namespace string
}

func newRedsyncExec(c redis.UniversalClient, namespace string) Executor {
	return redsyncExec{rs: redsync.New(goredis.NewPool(c)), namespace: namespace}
}

func (e redsyncExec) Execute(ctx context.Context, keys []string, job func(context.Context) error, opts provider.ExecuteOptions) error {
	tries := int(opts.Timeout/redsyncMinDelay) + 2
	m := e.rs.NewMutex(e.namespace+keys[0], redsync.WithExpiry(opts.Expire), redsync.WithTries(tries))
	wait, cancel := context.WithTimeout(ctx, opts.Timeout)
	err := m.LockContext(wait)
	waited := wait.Err() != nil
	cancel()
	if err != nil {
		var taken *redsync.ErrTaken
		return gaveUp(ctx, waited || errors.Is(err, redsync.ErrFailed) || errors.As(err, &taken), err)
	}
	jobErr := job(ctx)
	ok, err := m.UnlockContext(context.WithoutCancel(ctx))
	if err == nil && !ok {
		err = errors.New("redsync: unlock found the key gone or another holder's")
	}
	return errors.Join(jobErr, err)
}

// gaveUp is a peer's failure to obtain: errNotObtained when the peer gave up waiting (or failed
// once its deadline had passed: a command cut short by the deadline), the error itself when it
// failed otherwise or the run was cancelled.
func gaveUp(ctx context.Context, waited bool, err error) error {
	if ctx.Err() == nil && waited {
		return fmt.Errorf("%w: %w", errNotObtained, err)
	}
	return err
}

// Bare loop tuning: a missed SET NX is retried after 1–5 ms, at random.
const (
	bareMinRetry = time.Millisecond
	bareMaxRetry = 5 * time.Millisecond
)

//go:embed bare_release.lua
var bareReleaseSrc string

var bareRelease = redis.NewScript(bareReleaseSrc)

// bareExec is the leanest lock there is: SET key token NX PX, retried every 1–5 ms until the
// timeout, and a compare-and-delete script (GET, DEL) to release.
type bareExec struct {
	c         redis.UniversalClient
	namespace string
}

func newBareExec(c redis.UniversalClient, namespace string) Executor {
	return bareExec{c: c, namespace: namespace}
}

func (e bareExec) Execute(ctx context.Context, keys []string, job func(context.Context) error, opts provider.ExecuteOptions) error {
	key, token := e.namespace+keys[0], rand.Text()
	deadline := time.Now().Add(opts.Timeout)
	for {
		// The attempt runs on ctx, not on a deadline: a SET cut short by a deadline could take
		// the key with a token nobody holds.
		err := e.c.Do(ctx, "SET", key, token, "NX", "PX", opts.Expire.Milliseconds()).Err()
		if err == nil {
			break
		}
		if !errors.Is(err, redis.Nil) {
			return err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return errNotObtained
		}
		if err := sleep(ctx, min(bareMinRetry+mrand.N(bareMaxRetry-bareMinRetry), left)); err != nil {
			return err
		}
	}
	jobErr := job(ctx)
	n, err := bareRelease.Run(context.WithoutCancel(ctx), e.c, []string{key}, token).Int()
	if err == nil && n != 1 {
		err = errors.New("bare: release found the key gone or another holder's")
	}
	return errors.Join(jobErr, err)
}

// sleep waits d or until ctx ends (then it returns ctx's cause).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
