package provider_test

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/locktui/locktui/internal/testsupport/locktest"
	"github.com/locktui/locktui/provider"
	"github.com/stretchr/testify/require"
)

// The wire format is what Node's stock provider reads: Namespace+key, the owner as a plain
// string, TTLs in whole seconds.

func TestKeyIsNamespacePlusKeyAndValueIsOwner(t *testing.T) {
	e := newEnv(t, nil)
	require.NoError(t, e.P.Acquire(ctx(t), []string{"cart:1"}, provider.AcquireOptions{Owner: "user_1"}))

	v, err := e.RDB.Get(ctx(t), e.NS+"cart:1").Result()
	require.NoError(t, err)
	require.Equal(t, "user_1", v)
	typ, err := e.RDB.Type(ctx(t), e.NS+"cart:1").Result()
	require.NoError(t, err)
	require.Equal(t, "string", typ)
	require.Equal(t, e.NS+"cart:1", e.P.RedisKey("cart:1"))
}

func TestDefaultOwnerIsStar(t *testing.T) {
	e := newEnv(t, nil)
	require.NoError(t, e.P.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{}))
	e.RequireOwner("k", "*")

	ok, err := e.P.Release(ctx(t), []string{"k"}, "")
	require.NoError(t, err)
	require.True(t, ok, `Release with no owner releases a "*" lock`)
	e.RequireFree("k")
}

func TestDefaultNamespaceIsMedusaLock(t *testing.T) {
	e := newEnv(t, nil)
	p := locktest.NewProvider(t, e.PC, nil)
	require.Equal(t, "medusa_lock:", p.Namespace())
	key := "default-ns-" + e.NS // unique: the default namespace is shared with other tests
	require.NoError(t, p.Acquire(ctx(t), []string{key}, provider.AcquireOptions{Owner: "o"}))
	t.Cleanup(func() { e.RDB.Del(context.Background(), "medusa_lock:"+key) })

	v, err := e.RDB.Get(ctx(t), "medusa_lock:"+key).Result()
	require.NoError(t, err)
	require.Equal(t, "o", v)
}

func TestCustomNamespace(t *testing.T) {
	e := newEnv(t, &provider.Options{Namespace: "shop{1}/locks|"})
	require.Equal(t, "shop{1}/locks|", e.P.Namespace())
	require.NoError(t, e.P.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: "o"}))
	v, err := e.RDB.Get(ctx(t), "shop{1}/locks|k").Result()
	require.NoError(t, err)
	require.Equal(t, "o", v)
	_, _ = e.P.Release(ctx(t), []string{"k"}, "o")
}

var executeOwner = regexp.MustCompile(`^execute:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestExecuteOwnerIsFreshUUIDv4PerCall(t *testing.T) {
	e := newEnv(t, nil)
	var owners []string
	for range 2 {
		err := e.P.Execute(ctx(t), []string{"k"}, func(context.Context) error {
			v, ok := e.Owner("k")
			require.True(t, ok)
			owners = append(owners, v)
			return nil
		}, provider.ExecuteOptions{})
		require.NoError(t, err)
		e.RequireFree("k")
	}
	require.Len(t, owners, 2)
	for _, o := range owners {
		require.Regexp(t, executeOwner, o)
		require.Len(t, o, 44)
	}
	require.NotEqual(t, owners[0], owners[1])
	require.Regexp(t, executeOwner, provider.NewExecuteOwner())
}

// TTLs are whole seconds as in stock; zero means the default lease (60 s), NoExpiry no expiry.
// A fraction above one second is rounded up (stock rejects it with a Redis error), so a lock
// never lives shorter than asked.
func TestAcquireTTLWholeSeconds(t *testing.T) {
	cases := []struct {
		expire time.Duration
		want   int64
	}{
		{10 * time.Second, 10},
		{0, 60},
		{provider.NoExpiry, -1},
		{500 * time.Millisecond, 1},
		{-5 * time.Second, 1},
		{1500 * time.Millisecond, 2},
		{2*time.Second + time.Nanosecond, 3},
	}
	e := newEnv(t, nil)
	for _, c := range cases {
		t.Run(c.expire.String(), func(t *testing.T) {
			key := "ttl-" + c.expire.String()
			require.NoError(t, e.P.Acquire(ctx(t), []string{key}, provider.AcquireOptions{Owner: "o", Expire: c.expire}))
			require.Equal(t, c.want, e.ttl(key), "TTL after Acquire with Expire %v", c.expire)
		})
	}
}

func TestSameOwnerReacquireRewritesTTL(t *testing.T) {
	e := newEnv(t, nil)
	acquire := func(expire time.Duration) {
		t.Helper()
		require.NoError(t, e.P.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: "o1", Expire: expire}))
	}
	acquire(10 * time.Second)
	require.Equal(t, int64(10), e.ttl("k"))
	acquire(20 * time.Second)
	require.Equal(t, int64(20), e.ttl("k"), "re-acquire with Expire rewrites the TTL")
	acquire(provider.NoExpiry)
	require.Equal(t, int64(-1), e.ttl("k"), "re-acquire with NoExpiry makes the lock persistent")
	e.RequireOwner("k", "o1")
}

func TestStarNeverReenters(t *testing.T) {
	e := newEnv(t, nil)
	require.NoError(t, e.P.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{}))
	for _, owner := range []string{"", "*"} {
		err := e.P.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: owner})
		conflict(t, err, provider.ErrNotAcquired, notAcquiredMsg("k"))
	}
	e.RequireOwner("k", "*")
}

func TestEmptyOwnerAndStarAreTheSameOwner(t *testing.T) {
	e := newEnv(t, nil)
	require.NoError(t, e.P.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: "*"}))
	ok, err := e.P.Release(ctx(t), []string{"k"}, "")
	require.NoError(t, err)
	require.True(t, ok)
}
