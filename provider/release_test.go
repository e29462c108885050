package provider_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

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

	locks, err := e.p.List(c)
	require.NoError(t, err)
	require.Empty(t, locks, "List does not see other namespaces either")
}

func TestReleaseAllWalksManyScanBatches(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	pipe := e.rdb.Pipeline()
	for i := range 250 {
		pipe.Set(c, e.key(fmt.Sprintf("mine:%03d", i)), "o", 0)
	}
	for i := range 50 {
		pipe.Set(c, e.key(fmt.Sprintf("theirs:%03d", i)), "x", 0)
	}
	_, err := pipe.Exec(c)
	require.NoError(t, err)

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

// afterScan runs f once, right after the first SCAN reply: the window in which stock's
// GET-then-UNLINK releaseAll could delete a key that changed owner.
type afterScan struct {
	once sync.Once
	f    func([]string)
}

func (h *afterScan) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *afterScan) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if sc, ok := cmd.(*redis.ScanCmd); ok && err == nil {
			if keys, _ := sc.Val(); len(keys) > 0 {
				h.once.Do(func() { h.f(keys) })
			}
		}
		return err
	}
}

func (h *afterScan) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func TestReleaseAllComparesOwnerAtDeleteTime(t *testing.T) {
	e := newEnv(t, nil)
	e.set("a", "o", 0)
	e.set("b", "o", 0)
	e.pc.AddHook(&afterScan{f: func([]string) {
		// Between the scan and the delete, "a" is released and taken by someone else.
		e.set("a", "thief", 0)
	}})
	n, err := e.p.ReleaseAll(ctx(t), "o")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	e.requireOwner("a", "thief")
	e.requireFree("b")
}
