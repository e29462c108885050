package compat_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/testsupport/stocknode"
	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/provider"
)

// TestExecuteCompat: Go Execute and stock execute on the same keys, on one traced stock driver.
func TestExecuteCompat(t *testing.T) {
	waiting := newWaitSignal()
	e := newEnv(t, "", &stocknode.Options{Trace: true}, &provider.Options{Observer: waiting})
	ctx := testContext(t)
	goP, stock := e.goP, e.stock

	t.Run("an execute on one side excludes the other", func(t *testing.T) {
		// Go Execute holds: stock acquire conflicts and stock execute times out.
		err := goP.Execute(ctx, []string{"ex:1"}, func(context.Context) error {
			requireStockConflict(t, stock.Acquire(ctx, []string{"ex:1"}, stocknode.AcquireArgs{OwnerID: "s"}), notAcquired("ex:1"))
			_, err := stock.Execute(ctx, []string{"ex:1"}, stocknode.ValueJob(1), stocknode.ExecuteArgs{Timeout: 1})
			requireStockConflict(t, err, timedOut)
			return nil
		}, provider.ExecuteOptions{Timeout: 30 * time.Second})
		require.NoError(t, err)

		// Stock execute holds: Go Acquire conflicts and Go Execute times out.
		held, err := stock.ExecuteAsync([]string{"ex:2"}, stocknode.HoldJob("ex2"), stocknode.ExecuteArgs{Timeout: 30})
		require.NoError(t, err)
		require.NoError(t, held.Started(ctx))
		requireGoConflict(t, goP.Acquire(ctx, []string{"ex:2"}, provider.AcquireOptions{Owner: "g"}), provider.ErrNotAcquired, notAcquired("ex:2"))
		ran := false
		err = goP.Execute(ctx, []string{"ex:2"}, func(context.Context) error { ran = true; return nil },
			provider.ExecuteOptions{Timeout: time.Second})
		requireGoConflict(t, err, provider.ErrTimedOut, timedOut)
		require.False(t, ran, "the Go job never ran")
		require.NoError(t, held.Finish(ctx))
		_, err = held.Wait(ctx)
		require.NoError(t, err)
	})

	t.Run("ten buys across both languages serialise", func(t *testing.T) {
		c := stocknode.Counter{StockKey: "stock:item_1", ActiveKey: "stock:item_1:active",
			OverlapKey: "stock:item_1:overlaps", Work: 10 * time.Millisecond}
		require.NoError(t, e.rdb.Set(ctx, c.StockKey, 5, 0).Err())
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			bought  int
			errs    []error
			pending []*stocknode.Execution
		)
		record := func(ok bool, err error) {
			mu.Lock()
			defer mu.Unlock()
			if ok {
				bought++
			}
			if err != nil {
				errs = append(errs, err)
			}
		}
		for i := 0; i < 5; i++ {
			wg.Go(func() {
				var ok bool
				err := goP.Execute(ctx, []string{"item_1"}, func(ctx context.Context) (err error) {
					ok, err = goBuy(ctx, e.rdb, c)
					return err
				}, provider.ExecuteOptions{Timeout: 90 * time.Second})
				record(ok, err)
			})
			ex, err := stock.ExecuteAsync([]string{"item_1"}, stocknode.BuyJob(c), stocknode.ExecuteArgs{Timeout: 90})
			require.NoError(t, err)
			pending = append(pending, ex)
		}
		for _, ex := range pending {
			res, err := ex.Wait(ctx)
			var br stocknode.BuyResult
			if err == nil {
				err = json.Unmarshal(res, &br)
			}
			record(br.Bought, err)
		}
		wg.Wait()
		require.Empty(t, errs)
		require.Equal(t, "0", e.rdb.Get(ctx, c.StockKey).Val(), "the stock ends at exactly 0")
		require.Equal(t, 5, bought)
		overlaps, _ := e.rdb.Get(ctx, c.OverlapKey).Int()
		require.Zero(t, overlaps, "no two buys ran at once")
		require.Empty(t, e.owner(ctx, t, "item_1"), "every execute released the key")
	})

	t.Run("stock waits on a Go lock until Go releases it", func(t *testing.T) {
		// A stock execute behind a Go lease.
		lease, err := goP.AcquireLease(ctx, []string{"w:1"}, provider.LeaseOptions{Timeout: 10 * time.Second})
		require.NoError(t, err)
		contended := stock.WatchScript("acquireLock", e.ns+"w:1", 0)
		held, err := stock.ExecuteAsync([]string{"w:1"}, stocknode.HoldJob("w1"), stocknode.ExecuteArgs{Timeout: 90})
		require.NoError(t, err)
		_, err = stock.AwaitEvent(ctx, contended)
		require.NoError(t, err)
		require.False(t, held.HasStarted(), "stock started its job while Go held the key")
		ok, err := lease.Release(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, held.Started(ctx))
		require.Regexp(t, executeOwner, e.owner(ctx, t, "w:1"))
		require.NotEqual(t, lease.Owner(), e.owner(ctx, t, "w:1"))
		require.NoError(t, held.Finish(ctx))
		_, err = held.Wait(ctx)
		require.NoError(t, err)

		// A queued stock acquire behind a Go acquire.
		require.NoError(t, goP.Acquire(ctx, []string{"w:2"}, provider.AcquireOptions{Owner: "go"}))
		contended = stock.WatchScript("acquireLock", e.ns+"w:2", 0)
		acquired := make(chan error, 1)
		go func() {
			acquired <- stock.Acquire(ctx, []string{"w:2"}, stocknode.AcquireArgs{OwnerID: "stock", Expire: 30, AwaitQueue: true})
		}()
		_, err = stock.AwaitEvent(ctx, contended)
		require.NoError(t, err)
		ok, err = goP.Release(ctx, []string{"w:2"}, "go")
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, <-acquired)
		require.Equal(t, "stock", e.owner(ctx, t, "w:2"))
	})

	t.Run("Go waits on a stock lock until stock releases it", func(t *testing.T) {
		require.NoError(t, stock.Acquire(ctx, []string{"w:3"}, stocknode.AcquireArgs{OwnerID: "stock", Expire: 60}))
		waited := waiting.on("w:3")
		done := make(chan error, 1)
		var owner string
		go func() {
			done <- goP.Execute(ctx, []string{"w:3"}, func(ctx context.Context) error {
				owner = e.rdb.Get(ctx, e.ns+"w:3").Val()
				return nil
			}, provider.ExecuteOptions{Timeout: 90 * time.Second})
		}()
		select {
		case <-waited:
		case err := <-done:
			t.Fatalf("Go Execute ended before waiting: %v", err)
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
		ok, err := stock.Release(ctx, []string{"w:3"}, "stock")
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, <-done)
		require.Regexp(t, executeOwner, owner, "the Go job ran under its own owner")
	})

	t.Run("a Go lease taken away cancels the job with ErrLockLost", func(t *testing.T) {
		for _, c := range []struct {
			name  string
			steal func(key string) error
			after string // the key's value after Execute returns
		}{
			{"deleted", func(key string) error { return e.rdb.Del(ctx, e.ns+key).Err() }, ""},
			{"overwritten", func(key string) error { return e.rdb.Set(ctx, e.ns+key, "thief", 0).Err() }, "thief"},
		} {
			t.Run(c.name, func(t *testing.T) {
				key := "lost:" + c.name
				var cause error
				err := goP.Execute(ctx, []string{key}, func(jobCtx context.Context) error {
					require.NoError(t, c.steal(key))
					select {
					case <-jobCtx.Done():
						cause = context.Cause(jobCtx)
					case <-ctx.Done():
						return ctx.Err()
					}
					return nil
				}, provider.ExecuteOptions{Timeout: 10 * time.Second, Expire: 3 * time.Second})
				requireGoConflict(t, err, provider.ErrLockLost, lostLock(key))
				requireGoConflict(t, cause, provider.ErrLockLost, lostLock(key))
				require.Equal(t, c.after, e.owner(ctx, t, key), "Go released nothing it no longer held")
				if c.after == "" {
					require.NoError(t, stock.Acquire(ctx, []string{key}, stocknode.AcquireArgs{OwnerID: "next"}),
						"stock takes the freed key")
				}
			})
		}
	})

	t.Run("Go lists a stock lock and force-releases it", func(t *testing.T) {
		require.NoError(t, stock.Acquire(ctx, []string{"inv:1"}, stocknode.AcquireArgs{OwnerID: "stock-owner", Expire: 30}))
		require.NoError(t, stock.Acquire(ctx, []string{"inv:3"}, stocknode.AcquireArgs{}))
		held, err := stock.ExecuteAsync([]string{"inv:2"}, stocknode.HoldJob("inv2"), stocknode.ExecuteArgs{Timeout: 30, Expire: 6})
		require.NoError(t, err)
		require.NoError(t, held.Started(ctx))

		ops := operator.New(e.rdb, &operator.Options{Namespace: e.ns}) // the console's reads and force-releases
		locks, err := ops.List(ctx)
		require.NoError(t, err)
		byKey := map[string]operator.Lock{}
		for _, l := range locks {
			byKey[l.Key] = l
		}
		inv1, inv2, inv3 := byKey["inv:1"], byKey["inv:2"], byKey["inv:3"]
		require.Equal(t, "stock-owner", inv1.Owner)
		require.Equal(t, e.ns+"inv:1", inv1.RedisKey)
		require.True(t, inv1.TTL > 0 && inv1.TTL <= 30*time.Second, "TTL %s", inv1.TTL)
		require.Regexp(t, executeOwner, inv2.Owner)
		require.True(t, inv2.TTL > 0 && inv2.TTL <= 6*time.Second, "TTL %s", inv2.TTL)
		require.Equal(t, operator.Lock{Key: "inv:3", RedisKey: e.ns + "inv:3", Owner: "*", TTL: provider.NoExpiry}, inv3,
			"a stock lock without expire never expires")
		owner, how, err := ops.ForceReleaseAny(ctx, "inv:3", operator.TellHolderFirst)
		require.NoError(t, err)
		require.Equal(t, operator.Freed, how, "a stock lock cannot be told: freed at once")
		require.Equal(t, "*", owner)

		how, err = ops.ForceReleaseOwner(ctx, "inv:1", "someone-else", operator.TellHolderFirst)
		require.NoError(t, err)
		require.Equal(t, operator.NotReleased, how, "compare-and-delete with the wrong owner")
		how, err = ops.ForceReleaseOwner(ctx, "inv:1", "stock-owner", operator.TellHolderFirst)
		require.NoError(t, err)
		require.Equal(t, operator.Freed, how)
		ok, err := stock.Release(ctx, []string{"inv:1"}, "stock-owner")
		require.NoError(t, err)
		require.False(t, ok, "stock sees its lock gone")

		// Force-releasing the running stock execute's key makes stock lose its lease.
		how, err = ops.ForceReleaseOwner(ctx, "inv:2", inv2.Owner, operator.TellHolderFirst)
		require.NoError(t, err)
		require.Equal(t, operator.Freed, how)
		reason, err := held.Aborted(ctx)
		require.NoError(t, err)
		require.Equal(t, stocknode.Error{Type: "conflict", Message: lostLock("inv:2"), Name: "Error", Medusa: true}, *reason)
		require.NoError(t, held.Finish(ctx))
		_, err = held.Wait(ctx)
		requireStockConflict(t, err, lostLock("inv:2"))
		require.True(t, sawWarning(stock.Logs(), lostLock("inv:2")), "stock logged the loss as a warning")
	})

	// Last: nothing above left a promise of the stock provider rejected without a handler.
	t.Run("no unhandled rejections in stock", func(t *testing.T) {
		for _, l := range stock.Logs() {
			require.NotEqual(t, "unhandled_rejection", l.Event, "stock: %+v", l.Error)
		}
	})
}

// sawWarning reports whether a warn log with message was seen.
func sawWarning(logs []stocknode.Event, message string) bool {
	for _, l := range logs {
		if l.Level == "warn" && l.Message == message {
			return true
		}
	}
	return false
}

// waitSignal is a provider.Observer that tells when the Go provider starts waiting on a key.
type waitSignal struct {
	mu      sync.Mutex
	waiters map[string]chan struct{}
}

func newWaitSignal() *waitSignal { return &waitSignal{waiters: map[string]chan struct{}{}} }

// on returns a channel closed the next time the provider waits on key.
func (w *waitSignal) on(key string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch := make(chan struct{})
	w.waiters[key] = ch
	return ch
}

// LockEvent implements provider.Observer; it never blocks.
func (w *waitSignal) LockEvent(ev provider.Event) {
	if ev.Kind != provider.EventWaiting {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if ch, ok := w.waiters[ev.Key]; ok {
		close(ch)
		delete(w.waiters, ev.Key)
	}
}
