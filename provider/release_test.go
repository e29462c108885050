package provider_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/provider"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

func TestReleaseReportsWhetherEveryKeyWasReleased(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)

	ok, err := e.P.Release(c, nil, "o")
	require.NoError(t, err)
	require.True(t, ok, "no keys: true, as in stock")

	ok, err = e.P.Release(c, []string{"missing"}, "o")
	require.NoError(t, err)
	require.False(t, ok)

	e.Set("mine", "o", 0)
	e.Set("theirs", "x", 0)
	ok, err = e.P.Release(c, []string{"mine", "theirs", "missing"}, "o")
	require.NoError(t, err)
	require.False(t, ok, "one key of another owner makes the result false")
	e.RequireFree("mine")
	e.RequireOwner("theirs", "x")
}

func TestReleaseIsOwnerExact(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	e.Set("named", "o1", 0)
	e.Set("anon", "*", 0)

	ok, err := e.P.Release(c, []string{"named"}, "")
	require.NoError(t, err)
	require.False(t, ok, `owner "*" does not release a named lock`)
	ok, err = e.P.Release(c, []string{"anon"}, "o1")
	require.NoError(t, err)
	require.False(t, ok, `a named owner does not release a "*" lock`)
	ok, err = e.P.Release(c, []string{"named"}, "o1*")
	require.NoError(t, err)
	require.False(t, ok, "no wildcard matching")
	e.RequireOwner("named", "o1")
	e.RequireOwner("anon", "*")
}

func TestReleaseAllDeletesOnlyTheOwnersKeys(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	e.Set("a1", "owner_a", 0)
	e.Set("a2", "owner_a", 0)
	e.Set("b", "owner_b", 0)
	e.Set("anon", "*", 0)
	e.Set("exec", "execute:1b4e28ba-2fa1-41d2-883f-0016d3cca427", 0)
	require.NoError(t, e.RDB.Set(c, "elsewhere:a3", "owner_a", 0).Err()) // outside the namespace
	t.Cleanup(func() { e.RDB.Del(context.Background(), "elsewhere:a3") })

	n, err := e.P.ReleaseAll(c, "owner_a")
	require.NoError(t, err)
	require.Equal(t, 2, n)
	e.RequireFree("a1")
	e.RequireFree("a2")
	e.RequireOwner("b", "owner_b")
	e.RequireOwner("anon", "*")
	require.Equal(t, "owner_a", e.RDB.Get(c, "elsewhere:a3").Val())

	n, err = e.P.ReleaseAll(c, "")
	require.NoError(t, err)
	require.Equal(t, 1, n, `the default owner "*" only deletes "*" locks`)
	e.RequireFree("anon")
	e.RequireOwner("b", "owner_b")
	e.RequireOwner("exec", "execute:1b4e28ba-2fa1-41d2-883f-0016d3cca427")
}

func TestReleaseAllSkipsKeysOfOtherTypes(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	require.NoError(t, e.RDB.HSet(c, e.Key("hash"), "owner", "*").Err())
	require.NoError(t, e.RDB.RPush(c, e.Key("list"), "*").Err())
	require.NoError(t, e.RDB.SAdd(c, e.Key("set"), "*").Err())
	e.Set("lock", "*", 0)

	n, err := e.P.ReleaseAll(c, "*")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	e.RequireFree("lock")
	exists, err := e.RDB.Exists(c, e.Key("hash"), e.Key("list"), e.Key("set")).Result()
	require.NoError(t, err)
	require.Equal(t, int64(3), exists)
}

// Stock uses the namespace as a SCAN glob, so "*", "?" and "[" in it widen the match; here they
// match only themselves.
func TestReleaseAllEscapesGlobCharactersOfTheNamespace(t *testing.T) {
	base := newEnv(t, nil)
	globNS := base.NS + "ns?[x]*:"
	e := newEnv(t, &provider.Options{Namespace: globNS})
	c := ctx(t)
	siblings := []string{base.NS + "nsAxB:k", base.NS + "ns?[x]*zz:k", base.NS + "nsQx:k", base.NS + "ns?[x]*"}
	for _, k := range siblings {
		require.NoError(t, e.RDB.Set(c, k, "*", 0).Err())
	}
	e.Set("k", "*", 0)

	n, err := e.P.ReleaseAll(c, "")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	e.RequireFree("k")
	for _, k := range siblings {
		require.Equal(t, "*", e.RDB.Get(c, k).Val(), "key %q of another namespace", k)
	}

	locks, err := e.Ops.List(c)
	require.NoError(t, err)
	require.Empty(t, locks, "List does not see other namespaces either")
}

func TestReleaseAllWalksManyScanBatches(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	e.Fill("mine:", "o", 250)
	e.Fill("theirs:", "x", 50)

	n, err := e.P.ReleaseAll(c, "o")
	require.NoError(t, err)
	require.Equal(t, 250, n)
	left, err := e.RDB.Keys(c, e.NS+"*").Result()
	require.NoError(t, err)
	require.Len(t, left, 50)
	for _, k := range left {
		require.True(t, strings.HasPrefix(k, e.NS+"theirs:"), k)
	}
}

// afterRead runs f once, right after the first round trip that reads the keys a SCAN found (its
// GETs): the window in which a release that deleted on what it read would delete a key that
// changed owner (stock's GET-then-UNLINK releaseAll did).
func afterRead(e *env, f func()) {
	var once sync.Once
	rec := &redistest.Recorder{}
	rec.AfterReply(func(_ context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "get" {
			once.Do(f)
		}
		return nil
	})
	e.PC.AddHook(rec)
}

func TestReleaseAllComparesOwnerAtDeleteTime(t *testing.T) {
	e := newEnv(t, nil)
	e.Set("a", "o", 0)
	e.Set("b", "o", 0)
	afterRead(e, func() {
		// Between the read and the delete, "a" is released and taken by someone else.
		e.Set("a", "thief", 0)
	})
	n, err := e.P.ReleaseAll(ctx(t), "o")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	e.RequireOwner("a", "thief")
	e.RequireFree("b")
}

// A key whose delete Redis refuses with a reply error (here: the client's user lost the right
// to UNLINK between the read and the delete) does not stop the walk, and the first such error is
// returned, with its key, at the end; the count stays what was deleted.
func TestReleaseAllReportsAKeyRedisRefused(t *testing.T) {
	srv := redistest.Start(t) // a server of its own: the test changes its default user
	e := newEnvOn(t, srv, nil)
	e.Set("a", "o", 0)
	e.Set("b", "o", 0)
	afterRead(e, func() {
		require.NoError(t, e.RDB.Do(context.Background(), "ACL", "SETUSER", "default", "-unlink").Err())
	})
	n, err := e.P.ReleaseAll(ctx(t), "o")
	require.ErrorContains(t, err, "can't run this command")
	require.Regexp(t, `release "[ab]": `, err.Error(), "the error names its key")
	require.Zero(t, n)
	require.NoError(t, e.RDB.Do(ctx(t), "ACL", "SETUSER", "default", "+unlink").Err())
	e.RequireOwner("a", "o")
	e.RequireOwner("b", "o")
}
