package compat_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/testsupport/stocknode"
	"github.com/locktui/locktui/provider"
)

// TestAcquireCompat: acquire, re-entry, release and releaseAll across the two providers, on one
// stock driver. Every subtest uses its own keys.
func TestAcquireCompat(t *testing.T) {
	e := newEnv(t, "", nil, nil)
	ctx := testContext(t)
	goP, stock := e.goP, e.stock

	t.Run("Go holds, stock cannot acquire", func(t *testing.T) {
		require.NoError(t, goP.Acquire(ctx, []string{"cart:1"}, provider.AcquireOptions{Owner: "go-1", Expire: 30 * time.Second}))
		for _, owner := range []string{"stock-1", "", "*"} {
			err := stock.Acquire(ctx, []string{"cart:1"}, stocknode.AcquireArgs{OwnerID: owner, Expire: 10})
			requireStockConflict(t, err, notAcquired("cart:1"))
		}
		// A multi-key stock call names the held key.
		err := stock.Acquire(ctx, []string{"cart:1b", "cart:1"}, stocknode.AcquireArgs{OwnerID: "stock-1", Expire: 10})
		requireStockConflict(t, err, notAcquired("cart:1"))
		require.Equal(t, "go-1", e.owner(ctx, t, "cart:1"), "the Go lock is untouched")
	})

	t.Run("stock holds, Go cannot acquire", func(t *testing.T) {
		require.NoError(t, stock.Acquire(ctx, []string{"cart:2"}, stocknode.AcquireArgs{OwnerID: "stock-2", Expire: 30}))
		for _, owner := range []string{"go-2", "", "*"} {
			err := goP.Acquire(ctx, []string{"cart:2"}, provider.AcquireOptions{Owner: owner, Expire: 10 * time.Second})
			requireGoConflict(t, err, provider.ErrNotAcquired, notAcquired("cart:2"))
		}
		err := goP.Acquire(ctx, []string{"cart:2b", "cart:2"}, provider.AcquireOptions{Owner: "go-2"})
		requireGoConflict(t, err, provider.ErrNotAcquired, notAcquired("cart:2"))
		require.Equal(t, "stock-2", e.owner(ctx, t, "cart:2"))
	})

	t.Run("the same owner re-enters across languages", func(t *testing.T) {
		// Go first, then stock with the same owner: the stock re-entry rewrites the TTL.
		require.NoError(t, goP.Acquire(ctx, []string{"re:1"}, provider.AcquireOptions{Owner: "X", Expire: 10 * time.Second}))
		require.NoError(t, stock.Acquire(ctx, []string{"re:1"}, stocknode.AcquireArgs{OwnerID: "X", Expire: 300}))
		require.Greater(t, e.ttl(ctx, t, "re:1"), 200*time.Second, "stock's re-entry rewrote Go's TTL")
		require.NoError(t, stock.Acquire(ctx, []string{"re:1"}, stocknode.AcquireArgs{OwnerID: "X"}))
		require.Equal(t, time.Duration(-1), e.ttl(ctx, t, "re:1"), "re-entry without expire clears the TTL")
		ok, err := goP.Release(ctx, []string{"re:1"}, "X")
		require.NoError(t, err)
		require.True(t, ok)

		// Stock first, then Go.
		require.NoError(t, stock.Acquire(ctx, []string{"re:2"}, stocknode.AcquireArgs{OwnerID: "X", Expire: 10}))
		require.NoError(t, goP.Acquire(ctx, []string{"re:2"}, provider.AcquireOptions{Owner: "X", Expire: 300 * time.Second}))
		require.Greater(t, e.ttl(ctx, t, "re:2"), 200*time.Second, "Go's re-entry rewrote stock's TTL")
		ok, err = stock.Release(ctx, []string{"re:2"}, "X")
		require.NoError(t, err)
		require.True(t, ok)
		require.Empty(t, e.owner(ctx, t, "re:2"))
	})

	t.Run("the anonymous owner never re-enters", func(t *testing.T) {
		require.NoError(t, goP.Acquire(ctx, []string{"anon:1"}, provider.AcquireOptions{}))
		require.Equal(t, "*", e.owner(ctx, t, "anon:1"))
		requireStockConflict(t, stock.Acquire(ctx, []string{"anon:1"}, stocknode.AcquireArgs{}), notAcquired("anon:1"))
		requireStockConflict(t, stock.Acquire(ctx, []string{"anon:1"}, stocknode.AcquireArgs{OwnerID: "*"}), notAcquired("anon:1"))

		require.NoError(t, stock.Acquire(ctx, []string{"anon:2"}, stocknode.AcquireArgs{}))
		require.Equal(t, "*", e.owner(ctx, t, "anon:2"))
		requireGoConflict(t, goP.Acquire(ctx, []string{"anon:2"}, provider.AcquireOptions{}), provider.ErrNotAcquired, notAcquired("anon:2"))
		requireGoConflict(t, goP.Acquire(ctx, []string{"anon:2"}, provider.AcquireOptions{Owner: "*"}), provider.ErrNotAcquired, notAcquired("anon:2"))

		// Either side releases the other's anonymous lock without naming an owner.
		ok, err := stock.Release(ctx, []string{"anon:1"}, "")
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = goP.Release(ctx, []string{"anon:2"}, "")
		require.NoError(t, err)
		require.True(t, ok)
	})

	t.Run("stock release frees Go locks of its owner only", func(t *testing.T) {
		require.NoError(t, goP.Acquire(ctx, []string{"rel:a"}, provider.AcquireOptions{Owner: "A", Expire: 30 * time.Second}))
		require.NoError(t, goP.Acquire(ctx, []string{"rel:b"}, provider.AcquireOptions{Owner: "B", Expire: 30 * time.Second}))
		require.NoError(t, goP.Acquire(ctx, []string{"rel:anon"}, provider.AcquireOptions{}))

		for _, c := range []struct {
			key, owner string
		}{{"rel:b", "A"}, {"rel:a", "B"}, {"rel:a", ""}, {"rel:anon", "A"}, {"rel:missing", "A"}} {
			ok, err := stock.Release(ctx, []string{c.key}, c.owner)
			require.NoError(t, err)
			require.False(t, ok, "stock release(%q, owner %q)", c.key, c.owner)
		}
		require.Equal(t, "A", e.owner(ctx, t, "rel:a"))
		require.Equal(t, "B", e.owner(ctx, t, "rel:b"))
		require.Equal(t, "*", e.owner(ctx, t, "rel:anon"))

		for _, c := range []struct {
			key, owner string
		}{{"rel:a", "A"}, {"rel:b", "B"}, {"rel:anon", ""}} {
			ok, err := stock.Release(ctx, []string{c.key}, c.owner)
			require.NoError(t, err)
			require.True(t, ok, "stock release(%q, owner %q)", c.key, c.owner)
			require.Empty(t, e.owner(ctx, t, c.key))
		}
	})

	t.Run("stock releaseAll frees Go locks of its owner only", func(t *testing.T) {
		for key, owner := range map[string]string{"ra:a1": "A", "ra:a2": "A", "ra:b": "B", "ra:anon": ""} {
			require.NoError(t, goP.Acquire(ctx, []string{key}, provider.AcquireOptions{Owner: owner, Expire: 30 * time.Second}))
		}
		lease, err := goP.AcquireLease(ctx, []string{"ra:lease"}, provider.LeaseOptions{Timeout: 10 * time.Second})
		require.NoError(t, err)
		defer func() { _, _ = lease.Release(context.WithoutCancel(ctx)) }()

		require.NoError(t, stock.ReleaseAll(ctx, "A"))
		require.Empty(t, e.owner(ctx, t, "ra:a1"))
		require.Empty(t, e.owner(ctx, t, "ra:a2"))
		require.Equal(t, "B", e.owner(ctx, t, "ra:b"))
		require.Equal(t, "*", e.owner(ctx, t, "ra:anon"))
		require.Equal(t, lease.Owner(), e.owner(ctx, t, "ra:lease"))

		require.NoError(t, stock.ReleaseAll(ctx, ""), "no owner: only \"*\" locks go")
		require.Empty(t, e.owner(ctx, t, "ra:anon"))
		require.Equal(t, "B", e.owner(ctx, t, "ra:b"))
		require.Equal(t, lease.Owner(), e.owner(ctx, t, "ra:lease"))
		ok, err := lease.Release(ctx)
		require.NoError(t, err)
		require.True(t, ok, "the Go lease survived stock's releaseAll")
	})

	t.Run("Go ReleaseAll frees stock locks of its owner only", func(t *testing.T) {
		for key, owner := range map[string]string{"gra:a1": "A", "gra:a2": "A", "gra:b": "B", "gra:anon": ""} {
			require.NoError(t, stock.Acquire(ctx, []string{key}, stocknode.AcquireArgs{OwnerID: owner, Expire: 30}))
		}
		held, err := stock.ExecuteAsync([]string{"gra:exec"}, stocknode.HoldJob("gra"), stocknode.ExecuteArgs{Timeout: 30})
		require.NoError(t, err)
		require.NoError(t, held.Started(ctx))
		execOwner := e.owner(ctx, t, "gra:exec")

		n, err := goP.ReleaseAll(ctx, "A")
		require.NoError(t, err)
		require.Equal(t, 2, n)
		require.Empty(t, e.owner(ctx, t, "gra:a1"))
		require.Empty(t, e.owner(ctx, t, "gra:a2"))
		require.Equal(t, "B", e.owner(ctx, t, "gra:b"))
		require.Equal(t, "*", e.owner(ctx, t, "gra:anon"))

		n, err = goP.ReleaseAll(ctx, "")
		require.NoError(t, err)
		require.Equal(t, 1, n, "no owner: only the \"*\" lock goes")
		require.Empty(t, e.owner(ctx, t, "gra:anon"))
		require.Equal(t, "B", e.owner(ctx, t, "gra:b"))
		require.Equal(t, execOwner, e.owner(ctx, t, "gra:exec"), "the stock execute keeps its lock")

		require.NoError(t, held.Finish(ctx))
		_, err = held.Wait(ctx)
		require.NoError(t, err)
		ok, err := stock.Release(ctx, []string{"gra:b"}, "B")
		require.NoError(t, err)
		require.True(t, ok)
	})
}
