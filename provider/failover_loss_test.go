package provider_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/testsupport/locktest"
	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/locktui/locktui/provider"
	"github.com/locktui/locktui/redisconn"
)

// The bounds of TestSentinelFailoverThatLosesAnAcquisition.
const (
	// lossStall is the replica's DEBUG SLEEP: it covers the clog, the acquisition and the kill
	// (a few hundred ms at most), and stays below the sentinels' down-after (2 s), so that the
	// replica is never seen down and the failover promotes it.
	lossStall = 800 * time.Millisecond
	// lossExpire is the holder's Expire: its first renewal (Expire/3, 10 s) comes after the
	// failover (about 2.3 s, 8 s after a split vote) and lossTold, so that the epoch probe alone
	// tells it (with Expire 10 s, a renewal 3.3 s after the acquisition could reach the new
	// master first and report stock's "lease expired"); its deadline (27 s) is far.
	lossExpire = 30 * time.Second
	// lossWaiterExpire is the waiter's Expire.
	lossWaiterExpire = 10 * time.Second
	// lossWait is the waiter's timeout.
	lossWait = 15 * time.Second
	// lossPromote bounds kill → promotion: about 3 s (2 s down-after, the vote, REPLICAOF NO
	// ONE); a split vote is retried 6 s later.
	lossPromote = 15 * time.Second
	// lossTold bounds the new master answering (every sentinel names it) → the holder told,
	// from the code:
	//   - provider/epoch.go probes epochProbe (500 ms) after the previous probe ended, and a
	//     probe that cannot reach Redis ends at its own 500 ms timeout;
	//   - go-redis's Sentinel dialer asks the sentinel for the master at every dial attempt,
	//     100 ms apart (DialerRetryTimeout), so a probe in flight when the sentinels name the
	//     new master reaches it within 100 ms, or its timeout ends first and the next probe
	//     starts within 500 ms: at most 600 ms when the pool still dials;
	//   - a go-redis pool that failed PoolSize dials (counted over its life) stops dialing and
	//     tries once a second (pool.tryDial) until a dial succeeds; the first probe after it
	//     starts within 500 ms: at most 1.5 s;
	//   - plus 100 ms for the round trips and timers late on a busy host.
	lossTold = 500*time.Millisecond + time.Second + 100*time.Millisecond
)

// TestSentinelFailoverThatLosesAnAcquisition measures the window Sentinel cannot close: an
// acquisition acknowledged by the master and lost with it, its replica not having it yet. The
// replica is stalled (DEBUG SLEEP) and the master made to hold its replication stream in its
// own memory (Clog); a holder takes a lease (Expire 30 s) on the master, which is SIGKILLed;
// once the replica is promoted, a second provider, on a client of its own as another process,
// takes the key at once. The holder must be told, by the epoch probe (ErrServerRestarted), no
// later than lossTold after the new master answers; the overlap (holder told − waiter granted)
// is logged. docs/safety.md ("Failovers") states the window.
func TestSentinelFailoverThatLosesAnAcquisition(t *testing.T) {
	noLeaks(t)
	dep := redistest.StartSentinelWith(t, redistest.SentinelConfig{DebugCommand: true})
	ns := locktest.Namespace(t)
	const key = "job"
	probes := &redistest.Recorder{}
	holder, holderClient := sentinelProvider(t, dep, ns, probes)
	waiter, waiterClient := sentinelProvider(t, dep, ns, nil)
	c, cancel := context.WithTimeout(t.Context(), 25*time.Second)
	defer cancel()
	// Both processes are in use: each client holds a connection to the master.
	require.NoError(t, holderClient.Ping(c).Err())
	require.NoError(t, waiterClient.Ping(c).Err())

	master, replica := dep.Nodes[0], dep.Nodes[1]
	awake := replica.Stall(t, lossStall)
	stalled := time.Now()
	master.Clog(t)
	lease, err := holder.AcquireLease(c, []string{key}, provider.LeaseOptions{Expire: lossExpire, Timeout: time.Second})
	require.NoError(t, err)
	acquired := time.Now()
	told := make(chan time.Time, 1)
	go func() {
		<-lease.Done()
		told <- time.Now()
	}()
	t.Cleanup(func() { _, _ = lease.Release(context.Background()) })
	// The holder's provider has read the master's run_id before the kill: epoch.go compares
	// run_ids only once it has one, so a provider whose first probe came after the failover
	// would take the new master's as its first and notice nothing.
	require.Eventually(t, func() bool { return provider.EpochKnown(holder) }, wait, poll)
	select {
	case <-awake:
		t.Fatalf("the replica woke %s after its stall began, before the kill: the acquisition may have reached it", time.Since(stalled))
	default:
	}
	master.Kill(t)
	killed := time.Now()
	t.Logf("stall → acquired %s, acquired → killed %s", acquired.Sub(stalled), killed.Sub(acquired))

	promotedNode, promoted := dep.AwaitFailover(t, master, lossPromote)
	answered := time.Now()
	held, err := promotedNode.Client().Exists(c, holder.RedisKey(key)).Result()
	require.NoError(t, err)
	require.Zero(t, held, "the promoted replica has the holder's key: the acquisition was replicated, not lost")

	wl, err := waiter.AcquireLease(c, []string{key}, provider.LeaseOptions{Expire: lossWaiterExpire, Timeout: lossWait})
	require.NoError(t, err, "the waiter takes the key the failover lost")
	granted := time.Now()
	defer func() { _, _ = wl.Release(context.Background()) }()

	var toldAt time.Time
	select {
	case toldAt = <-told:
	case <-time.After(time.Until(answered.Add(lossTold + 5*time.Second))):
		t.Fatalf("the holder was not told within %s of the new master answering\nholder's probes from the kill:\n%s",
			lossTold+5*time.Second, probesSince(probes, killed))
	}
	t.Logf("kill → promotion (the first sentinel names %s) %s; kill → the new master answers (every sentinel names it) %s",
		promotedNode.Addr, promoted.Sub(killed), answered.Sub(killed))
	t.Logf("new master answers → waiter granted %s; new master answers → holder told %s (bound %s)",
		granted.Sub(answered), toldAt.Sub(answered), lossTold)
	t.Logf("overlap (holder told − waiter granted): %s; fencing tokens: holder %d, waiter %d",
		toldAt.Sub(granted), lease.FencingToken(), wl.FencingToken())
	t.Logf("holder's probes from the kill:\n%s", probesSince(probes, killed))

	require.ErrorIs(t, lease.Err(), provider.ErrLockLost)
	require.ErrorIs(t, lease.Err(), provider.ErrServerRestarted, "the loss says the server failed over: %v", lease.Err())
	require.LessOrEqual(t, toldAt.Sub(answered), lossTold, "the holder is told within %s of the new master answering", lossTold)
	require.Greater(t, wl.FencingToken(), lease.FencingToken(), "the waiter's fencing token is above the lost holder's")
}

// sentinelProvider returns a provider in namespace ns on a client of its own for dep's URL, as
// another process would have, with probes, when not nil, recording its epoch probes.
func sentinelProvider(t *testing.T, dep *redistest.Sentinel, ns string, probes *redistest.Recorder) (*provider.Provider, redis.UniversalClient) {
	t.Helper()
	client, err := redisconn.Open(dep.URL, redisconn.TLSFiles{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close() })
	if probes != nil {
		client.AddHook(probes)
	}
	return locktest.NewProvider(t, client, &provider.Options{Namespace: ns, Logger: slog.New(slog.DiscardHandler)}), client
}

// probesSince renders the INFO commands rec saw (the provider's epoch probes) that returned
// after from, relative to it.
func probesSince(rec *redistest.Recorder, from time.Time) string {
	var s strings.Builder
	for _, c := range rec.Calls() {
		if c.Name() != "info" || c.Replied.Before(from) {
			continue
		}
		outcome := "run_id " + runID(c.Cmd)
		if c.Err != nil {
			outcome = "failed: " + c.Err.Error()
		}
		fmt.Fprintf(&s, "  +%-7s → +%-7s %s\n", c.Sent.Sub(from).Round(time.Millisecond), c.Replied.Sub(from).Round(time.Millisecond), outcome)
	}
	return s.String()
}

// runID returns the first 8 characters of the run_id an answered INFO reports, or "".
func runID(info redis.Cmder) string {
	if sc, ok := info.(*redis.StringCmd); ok {
		for line := range strings.Lines(sc.Val()) {
			if id, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
				return id[:8]
			}
		}
	}
	return ""
}
