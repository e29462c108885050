package compat_test

import (
	"context"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/internal/testsupport/stocknode"
	"github.com/locktui/locktui/provider"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testTimeout bounds every test: generous, for a loaded 2-core machine.
const testTimeout = 2 * time.Minute

// executeOwner is the owner stock execute and Go Execute give each call.
var executeOwner = regexp.MustCompile(`^execute:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// env is one Redis with the Go provider and the stock provider on it.
type env struct {
	ns    string
	rdb   *redis.Client // raw reads and writes
	goP   *provider.Provider
	stock *stocknode.Driver
}

// newEnv starts a Redis, a Go provider and a stock driver on namespace ns ("" = the default
// "medusa_lock:" on both sides). opts may override the driver's options; its Namespace is set
// from ns. goOpts may be nil.
func newEnv(t *testing.T, ns string, opts *stocknode.Options, goOpts *provider.Options) *env {
	t.Helper()
	srv := redistest.Start(t)
	if opts == nil {
		opts = &stocknode.Options{}
	}
	opts.Namespace = ns
	if goOpts == nil {
		goOpts = &provider.Options{}
	}
	goOpts.Namespace = ns
	e := &env{
		ns:    ns,
		rdb:   srv.Client(t),
		goP:   provider.New(srv.Client(t), goOpts),
		stock: stocknode.Start(t, srv.URL, opts),
	}
	t.Cleanup(e.goP.Close)
	if e.ns == "" {
		e.ns = provider.DefaultNamespace
	}
	require.Equal(t, e.ns, e.stock.Info.Namespace, "both providers use one namespace")
	require.Equal(t, "2.21.2", e.stock.Info.Versions.LockingRedis, "the stock package under test")
	return e
}

// ctx returns a context for one test, bounded by testTimeout.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// owner reads the stored owner of key ("" when the key is missing).
func (e *env) owner(ctx context.Context, t *testing.T, key string) string {
	t.Helper()
	v, err := e.rdb.Get(ctx, e.ns+key).Result()
	if errors.Is(err, redis.Nil) {
		return ""
	}
	require.NoError(t, err)
	return v
}

// ttl reads the TTL of key in whole seconds as Redis reports it (-1 none, -2 missing).
func (e *env) ttl(ctx context.Context, t *testing.T, key string) time.Duration {
	t.Helper()
	d, err := e.rdb.TTL(ctx, e.ns+key).Result()
	require.NoError(t, err)
	return d
}

// requireStockConflict checks a stock MedusaError conflict with message msg.
func requireStockConflict(t *testing.T, err error, msg string) {
	t.Helper()
	var se *stocknode.Error
	require.ErrorAs(t, err, &se, "want a stock error, got %v", err)
	require.Equal(t, stocknode.Error{Type: "conflict", Message: msg, Name: "Error", Medusa: true}, *se)
}

// requireGoConflict checks a Go *provider.ConflictError of kind with message msg.
func requireGoConflict(t *testing.T, err error, kind error, msg string) {
	t.Helper()
	var ce *provider.ConflictError
	require.ErrorAs(t, err, &ce, "want a Go conflict, got %v", err)
	require.ErrorIs(t, err, kind)
	require.Equal(t, msg, ce.Error())
	require.Equal(t, "conflict", ce.Type())
}

// notAcquired is stock's message for a held key.
func notAcquired(key string) string { return `Failed to acquire lock for key "` + key + `"` }

// timedOut is stock execute's message when it cannot get its keys in time.
const timedOut = "Timed-out acquiring lock."

// lostLock is stock's message when a lease is lost under a running job.
func lostLock(key string) string {
	return `Lost the lock for key(s) "` + key + `" while the job was still running: the lease expired before it could be renewed. Increase "expire" if the job is expected to run this long.`
}

// goBuy is BuyJob in Go, step for step like the driver's: if the stock is positive, wait
// c.Work and write stock-1; count buys that found another one running.
func goBuy(ctx context.Context, rdb *redis.Client, c stocknode.Counter) (bought bool, err error) {
	active, err := rdb.Incr(ctx, c.ActiveKey).Result()
	if err != nil {
		return false, err
	}
	defer func() {
		if derr := rdb.Decr(context.WithoutCancel(ctx), c.ActiveKey).Err(); err == nil {
			err = derr
		}
	}()
	if active > 1 {
		if err := rdb.Incr(ctx, c.OverlapKey).Err(); err != nil {
			return false, err
		}
	}
	stock, err := rdb.Get(ctx, c.StockKey).Int()
	if err != nil || stock <= 0 {
		return false, err
	}
	// The work inside the critical section: it widens the window an overlap would show in.
	select {
	case <-time.After(c.Work):
	case <-ctx.Done():
		return false, context.Cause(ctx)
	}
	return true, rdb.Set(ctx, c.StockKey, stock-1, 0).Err()
}
