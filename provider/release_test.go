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

	ok, err := e.p.Release(c, nil, "o")
	require.NoError(t, err)
	require.True(t, ok, "no keys: true, as in stock")

	ok, err = e.p.Release(c, []string{"missing"}, "o")
	require.NoError(t, err)
	require.False(t, ok)

	e.set("mine", "o", 0)
	e.set("theirs", "x", 0)
	ok, err = e.p.Release(c, []string{"mine", "theirs", "missing"}, "o")
	require.NoError(t, err)
	require.False(t, ok, "one key of another owner makes the result false")
	e.requireFree("mine")
	e.requireOwner("theirs", "x")
}

func TestReleaseIsOwnerExact(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	e.set("named", "o1", 0)
	e.set("anon", "*", 0)

	ok, err := e.p.Release(c, []string{"named"}, "")
	require.NoError(t, err)
	require.False(t, ok, `owner "*" does not release a named lock`)
	ok, err = e.p.Release(c, []string{"anon"}, "o1")
	require.NoError(t, err)
	require.False(t, ok, `a named owner does not release a "*" lock`)
	ok, err = e.p.Release(c, []string{"named"}, "o1*")
	require.NoError(t, err)
	require.False(t, ok, "no wildcard matching")
	e.requireOwner("named", "o1")
	e.requireOwner("anon", "*")
}

func TestReleaseAllDeletesOnlyTheOwnersKeys(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	e.set("a1", "owner_a", 0)
	e.set("a2", "owner_a", 0)
	e.set("b", "owner_b", 0)
	e.set("anon", "*", 0)
	e.set("exec", "execute:1b4e28ba-2fa1-41d2-883f-0016d3cca427", 0)
	require.NoError(t, e.rdb.Set(c, "elsewhere:a3", "owner_a", 0).Err()) // outside the namespace
	t.Cleanup(func() { e.rdb.Del(context.Background(), "elsewhere:a3") })

	n, err := e.p.ReleaseAll(c, "owner_a")
	require.NoError(t, err)
	require.Equal(t, 2, n)
	e.requireFree("a1")
	e.requireFree("a2")
	e.requireOwner("b", "owner_b")
	e.requireOwner("anon", "*")
	require.Equal(t, "owner_a", e.rdb.Get(c, "elsewhere:a3").Val())

	n, err = e.p.ReleaseAll(c, "")
	require.NoError(t, err)
	require.Equal(t, 1, n, `the default owner "*" only deletes "*" locks`)
	e.requireFree("anon")
	e.requireOwner("b", "owner_b")
	e.requireOwner("exec", "execute:1b4e28ba-2fa1-41d2-883f-0016d3cca427")
}

func TestReleaseAllSkipsKeysOfOtherTypes(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	require.NoError(t, e.rdb.HSet(c, e.key("hash"), "owner", "*").Err())
	require.NoError(t, e.rdb.RPush(c, e.key("list"), "*").Err())
	require.NoError(t, e.rdb.SAdd(c, e.key("set"), "*").Err())
	e.set("lock", "*", 0)

	n, err := e.p.ReleaseAll(c, "*")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	e.requireFree("lock")
	exists, err := e.rdb.Exists(c, e.key("hash"), e.key("list"), e.key("set")).Result()
	require.NoError(t, err)
	require.Equal(t, int64(3), exists)
}

// Stock uses the namespace as a SCAN glob, so "*", "?" and "[" in it widen the match; here they
// match only themselves.
func TestReleaseAllEscapesGlobCharactersOfTheNamespace(t *testing.T) {
	base := newEnv(t, nil)
	globNS := base.ns + "ns?[x]*:"
	e := newEnv(t, &provider.Options{Namespace: globNS})
	c := ctx(t)
	siblings := []string{base.ns + "nsAxB:k", base.ns + "ns?[x]*zz:k", base.ns + "nsQx:k", base.ns + "ns?[x]*"}
	for _, k := range siblings {
		require.NoError(t, e.rdb.Set(c, k, "*", 0).Err())
	}
	e.set("k", "*", 0)

	n, err := e.p.ReleaseAll(c, "")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	e.requireFree("k")
	for _, k := range siblings {
		require.Equal(t, "*", e.rdb.Get(c, k).Val(), "key %q of another namespace", k)
	}

	locks, err := e.ops.List(c)
	require.NoError(t, err)
	require.Empty(t, locks, "List does not see other namespaces either")
}

func TestReleaseAllWalksManyScanBatches(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	e.fill("mine:", "o", 250)
	e.fill("theirs:", "x", 50)

	n, err := e.p.ReleaseAll(c, "o")
	require.NoError(t, err)
	require.Equal(t, 250, n)
	left, err := e.rdb.Keys(c, e.ns+"*").Result()
	require.NoError(t, err)
	require.Len(t, left, 50)
	for _, k := range left {
		require.True(t, strings.HasPrefix(k, e.ns+"theirs:"), k)
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
	e.pc.AddHook(rec)
}

func TestReleaseAllComparesOwnerAtDeleteTime(t *testing.T) {
	e := newEnv(t, nil)
	e.set("a", "o", 0)
	e.set("b", "o", 0)
	afterRead(e, func() {
		// Between the read and the delete, "a" is released and taken by someone else.
		e.set("a", "thief", 0)
	})
	n, err := e.p.ReleaseAll(ctx(t), "o")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	e.requireOwner("a", "thief")
	e.requireFree("b")
}

// A key whose delete Redis refuses with a reply error (here: the client's user lost the right
// to UNLINK between the read and the delete) does not stop the walk, and the first such error is
// returned, with its key, at the end; the count stays what was deleted.
func TestReleaseAllReportsAKeyRedisRefused(t *testing.T) {
	srv := redistest.Start(t) // a server of its own: the test changes its default user
	e := newEnvOn(t, srv, nil)
	e.set("a", "o", 0)
	e.set("b", "o", 0)
	afterRead(e, func() {
		require.NoError(t, e.rdb.Do(context.Background(), "ACL", "SETUSER", "default", "-unlink").Err())
	})
	n, err := e.p.ReleaseAll(ctx(t), "o")
	require.ErrorContains(t, err, "can't run this command")
	require.Regexp(t, `release "[ab]": `, err.Error(), "the error names its key")
	require.Zero(t, n)
	require.NoError(t, e.rdb.Do(ctx(t), "ACL", "SETUSER", "default", "+unlink").Err())
	e.requireOwner("a", "o")
	e.requireOwner("b", "o")
}
