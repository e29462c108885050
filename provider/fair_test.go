package provider_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/testsupport/locktest"
	"github.com/locktui/locktui/provider"
)

// fastOpts are fair-queue options whose waiters poll very often: without the queue, whichever
// poll comes first after a release would win, whatever the order of arrival.
func fastOpts(ns string, obs provider.Observer, ticketTTL time.Duration) *provider.Options {
	return &provider.Options{Namespace: ns, Observer: obs, FairQueue: true, QueueTicketTTL: ticketTTL,
		DefaultRetryInterval: time.Millisecond, MaximumRetryInterval: 2 * time.Millisecond}
}

// Waiters of several Providers (as of several processes) on one key get it in the order in
// which they started waiting.
func TestFairQueueServesWaitersInArrivalOrder(t *testing.T) {
	noLeaks(t)
	obs, waiting := waitSignal()
	e := newEnv(t, nil)
	provs := make([]*provider.Provider, 3)
	for i := range provs {
		provs[i] = locktest.NewProvider(t, e.Srv.Client(t), fastOpts(e.NS, obs, 0))
	}
	require.NoError(t, provs[0].Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: "holder"}))
	const n = 8
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	for i := range n {
		owner := fmt.Sprintf("w%d", i)
		p := provs[i%len(provs)]
		wg.Go(func() {
			err := p.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: owner, AwaitQueue: true})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, owner)
			mu.Unlock()
			time.Sleep(2 * time.Millisecond) // a short critical section: the others poll meanwhile
			if _, err := p.Release(ctx(t), []string{"k"}, owner); err != nil {
				t.Error(err)
			}
		})
		awaitWaiting(t, waiting, owner)
	}
	_, err := provs[0].Release(ctx(t), []string{"k"}, "holder")
	require.NoError(t, err)
	wg.Wait()
	want := make([]string, n)
	for i := range want {
		want[i] = fmt.Sprintf("w%d", i)
	}
	require.Equal(t, want, order, "first come, first served")
	require.Zero(t, queueLen(t, e.RDB, e.Key("k")), "an empty queue leaves no side keys")
	n2, err := e.RDB.Exists(ctx(t), "locktui:{"+e.Key("k")+"}:queue").Result()
	require.NoError(t, err)
	require.Zero(t, n2)
}

// A waiter that dies in the queue (its process killed: it never gives its ticket up) holds up
// the waiters behind it only until its ticket expires, QueueTicketTTL after its last refresh.
// Stock's SET NX is never blocked by the queue meanwhile.
func TestDeadWaiterHoldsUpTheQueueForABoundedTime(t *testing.T) {
	obs, waiting := waitSignal()
	e := newEnv(t, nil)
	const ticketTTL = 3 * time.Second
	deadClient := e.Srv.Client(t)
	dead := locktest.NewProvider(t, deadClient, fastOpts(e.NS, obs, ticketTTL))
	live := locktest.NewProvider(t, e.Srv.Client(t), fastOpts(e.NS, obs, ticketTTL))
	require.NoError(t, live.Acquire(ctx(t), []string{"k"}, provider.AcquireOptions{Owner: "holder"}))
	deadDone := goAcquire(t, dead, []string{"k"}, "dead")
	awaitWaiting(t, waiting, "dead")
	require.NoError(t, deadClient.Close()) // the process is gone: its ticket is never given up
	require.Error(t, result(t, deadDone, "the dead waiter"))
	ttl, err := e.RDB.PTTL(ctx(t), "locktui:{"+e.Key("k")+"}:tickets").Result()
	require.NoError(t, err)
	require.Positive(t, ttl, "the queue expires on its own")
	require.LessOrEqual(t, ttl, ticketTTL)

	liveDone := goAcquire(t, live, []string{"k"}, "live")
	awaitWaiting(t, waiting, "live")
	start := time.Now()
	_, err = live.Release(ctx(t), []string{"k"}, "holder")
	require.NoError(t, err)
	// A stock process is not held up by the dead ticket, nor by anything of the queue.
	ok, err := e.RDB.SetNX(ctx(t), e.Key("k"), "stock", 0).Result()
	require.NoError(t, err)
	require.True(t, ok, "stock's SET NX takes the free key")
	require.Equal(t, int64(2), queueLen(t, e.RDB, e.Key("k")), "the dead ticket is still queued, ahead of the live one")
	require.NoError(t, e.RDB.Del(ctx(t), e.Key("k")).Err())
	require.NoError(t, result(t, liveDone, "the live waiter"))
	e.RequireOwner("k", "live")
	// The live waiter got the key only once the dead ticket had expired.
	require.GreaterOrEqual(t, time.Since(start), ttl-100*time.Millisecond)
	require.Zero(t, queueLen(t, e.RDB, e.Key("k")))
}

// Multi-key calls queue only on the first key they do not hold, so a call holding k1 and
// queued on k2 and a call queued on k1 cannot wait for each other.
func TestFairQueueMultiKeyDoesNotDeadlock(t *testing.T) {
	noLeaks(t)
	obs, waiting := waitSignal()
	e := newEnv(t, nil)
	a := locktest.NewProvider(t, e.Srv.Client(t), fastOpts(e.NS, obs, 0))
	b := locktest.NewProvider(t, e.Srv.Client(t), fastOpts(e.NS, obs, 0))
	require.NoError(t, a.Acquire(ctx(t), []string{"k2"}, provider.AcquireOptions{Owner: "x"}))
	aDone := goAcquire(t, a, []string{"k2", "k1", "k3"}, "a") // takes k1, queues on k2
	awaitWaiting(t, waiting, "a")
	e.RequireOwner("k1", "a")
	bDone := goAcquire(t, b, []string{"k1", "k2", "k3"}, "b") // queues on k1
	awaitWaiting(t, waiting, "b")
	_, err := a.Release(ctx(t), []string{"k2"}, "x")
	require.NoError(t, err)
	require.NoError(t, result(t, aDone, "a"))
	for _, k := range []string{"k1", "k2", "k3"} {
		e.RequireOwner(k, "a")
	}
	_, err = a.Release(ctx(t), []string{"k1", "k2", "k3"}, "a")
	require.NoError(t, err)
	require.NoError(t, result(t, bDone, "b"))
	for _, k := range []string{"k1", "k2", "k3"} {
		e.RequireOwner(k, "b")
	}
}
