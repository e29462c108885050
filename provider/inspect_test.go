package provider_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locktui/locktui/provider"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

func TestListReportsKeyOwnerAndTTL(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	e.set("persistent", "o1", 0)
	e.set("expiring", "o2", 10*time.Second)
	require.NoError(t, e.rdb.HSet(c, e.key("foreign"), "f", "v").Err())
	require.NoError(t, e.rdb.Set(c, "other-ns:"+e.ns, "o3", 0).Err())
	t.Cleanup(func() { e.rdb.Del(context.Background(), "other-ns:"+e.ns) })

	locks, err := e.p.List(c)
	require.NoError(t, err)
	slices.SortFunc(locks, func(a, b provider.Lock) int { return strings.Compare(a.Key, b.Key) })
	require.Len(t, locks, 3)

	exp, foreign, pers := locks[0], locks[1], locks[2]
	require.Equal(t, "expiring", exp.Key)
	require.Equal(t, e.key("expiring"), exp.RedisKey)
	require.Equal(t, "o2", exp.Owner)
	require.False(t, exp.Foreign)
	require.Greater(t, exp.TTL, 8*time.Second)
	require.LessOrEqual(t, exp.TTL, 10*time.Second)

	require.Equal(t, provider.Lock{Key: "foreign", RedisKey: e.key("foreign"), TTL: provider.NoExpiry, Foreign: true}, foreign)
	require.Equal(t, provider.Lock{Key: "persistent", RedisKey: e.key("persistent"), Owner: "o1", TTL: provider.NoExpiry}, pers)
}

func TestScanWalksEveryBatch(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	e.fill("k", "o", 250)

	batches := 0
	seen := map[string]bool{}
	require.NoError(t, e.p.Scan(c, func(locks []provider.Lock) error {
		batches++
		for _, l := range locks {
			require.Equal(t, "o", l.Owner)
			seen[l.Key] = true
		}
		return nil
	}))
	require.Greater(t, batches, 1)
	require.Len(t, seen, 250)

	locks, err := e.p.List(c)
	require.NoError(t, err)
	require.Len(t, locks, 250)

	stop := errors.New("stop")
	err = e.p.Scan(c, func([]provider.Lock) error { return stop })
	require.ErrorIs(t, err, stop)
}

func TestGet(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	e.set("k", "o", 30*time.Second)
	require.NoError(t, e.rdb.HSet(c, e.key("h"), "f", "v").Err())

	l, ok, err := e.p.Get(c, "k")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "o", l.Owner)
	require.Greater(t, l.TTL, 25*time.Second)

	_, ok, err = e.p.Get(c, "missing")
	require.NoError(t, err)
	require.False(t, ok)

	l, ok, err = e.p.Get(c, "h")
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, l.Foreign)
}

func TestForceReleaseComparesTheOwner(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	e.set("k", "o1", 0)

	ok, err := didRelease(e.p.ForceReleaseOwner(c, "k", "o2", provider.TellHolderFirst))
	require.NoError(t, err)
	require.False(t, ok)
	e.requireOwner("k", "o1")

	ok, err = didRelease(e.p.ForceReleaseOwner(c, "k", "o1", provider.TellHolderFirst))
	require.NoError(t, err)
	require.True(t, ok)
	e.requireFree("k")

	ok, err = didRelease(e.p.ForceReleaseOwner(c, "k", "o1", provider.TellHolderFirst))
	require.NoError(t, err)
	require.False(t, ok)
}

// seen reads lock k as the console shows it: the hold an operator decides to force-release.
func (e *env) seen(k string) provider.Lock {
	e.t.Helper()
	l, ok, err := e.p.Get(ctx(e.t), k)
	require.NoError(e.t, err)
	require.True(e.t, ok, "%q is held", k)
	return l
}

// ForceReleaseHold cuts off only the hold that was seen: a hold taken since under the same
// owner, by one of ours (a new token) or by stock (no record), or re-entered by another process
// (its record names that process), is spared; the hold seen, also after renewals and re-entries
// of the process seen, is released.
func TestForceReleaseHoldSparesANewHoldOfTheSameOwner(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	release := func(l provider.Lock) bool {
		t.Helper()
		ok, err := didRelease(e.p.ForceReleaseHold(c, l, provider.TellHolderFirst))
		require.NoError(t, err)
		return ok
	}
	retake := func(k string, stock bool) {
		t.Helper()
		require.NoError(t, e.rdb.Del(c, e.key(k)).Err())
		if stock { // a TTL other than ours (a minute): the record ours left must not pass for its
			e.stockTake(k, "shared", 30)
		} else {
			e.token(e.p, k, "shared")
		}
	}

	e.token(e.p, "ours", "shared")
	seen := e.seen("ours")
	require.NotNil(t, seen.Record)
	retake("ours", false)
	require.False(t, release(seen), "our new hold under the same owner has another token")
	require.NotEqual(t, seen.Record.FencingToken, e.seen("ours").Record.FencingToken)
	retake("ours", true)
	require.False(t, release(seen), "a stock hold under the same owner is not the hold seen")
	e.requireOwner("ours", "shared")

	e.stockTake("stock", "shared", 30)
	seen = e.seen("stock")
	require.Nil(t, seen.Record)
	retake("stock", false)
	require.False(t, release(seen), "our hold under the same owner is not the stock hold seen")
	e.requireOwner("stock", "shared")
	retake("stock", true)
	require.True(t, release(seen), "a stock hold is one hold as long as it has no record")
	e.requireFree("stock")

	e.token(e.p, "joined", "shared")
	seen = e.seen("joined")
	other := newProvider(t, e.rdb, &provider.Options{Namespace: e.ns,
		Holder: provider.Holder{Host: "web-2", PID: 99, Program: "other-svc"}})
	e.token(other, "joined", "shared") // another process joins the hold: the same token
	require.Equal(t, seen.Record.FencingToken, e.seen("joined").Record.FencingToken)
	require.False(t, release(seen), "the process that re-entered was not seen")
	seen = e.seen("joined")
	e.token(other, "joined", "shared") // the process seen re-enters: the same hold
	require.False(t, release(provider.Lock{Key: "joined", Owner: "other", Record: seen.Record}))
	lease, err := e.p.AcquireLease(c, []string{"renewed"}, provider.LeaseOptions{Owner: "shared", Expire: 3 * time.Second})
	require.NoError(t, err)
	seenLease := e.seen("renewed")
	pttl := func() time.Duration { return e.rdb.PTTL(c, e.key("renewed")).Val() }
	low := pttl()
	require.Eventually(t, func() bool { // the TTL rose again: a renewal
		now := pttl()
		low = min(low, now)
		return now > low+100*time.Millisecond
	}, wait, poll, "the lease renews its key")
	require.True(t, release(seenLease), "a renewal does not change the hold")
	_, _ = lease.Release(c) // it lost its key: whatever it says
	require.True(t, release(seen))
	e.requireFree("joined")
	require.False(t, release(seen), "gone")
}

func TestForceReleaseAnyReturnsTheOwner(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	e.set("k", "execute:whoever", 10*time.Second)
	require.NoError(t, e.rdb.HSet(c, e.key("h"), "f", "v").Err())

	owner, ok, err := didReleaseAny(e.p.ForceReleaseAny(c, "k", provider.TellHolderFirst))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "execute:whoever", owner)
	e.requireFree("k")

	_, ok, err = didReleaseAny(e.p.ForceReleaseAny(c, "k", provider.TellHolderFirst))
	require.NoError(t, err)
	require.False(t, ok)

	_, ok, err = didReleaseAny(e.p.ForceReleaseAny(c, "h", provider.TellHolderFirst))
	require.NoError(t, err)
	require.False(t, ok, "a key that is not a lock is not deleted")
	require.Equal(t, int64(1), e.rdb.Exists(c, e.key("h")).Val())
}

func TestScanWithPacesEveryRoundTrip(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	const n = 250
	for i := range n {
		e.set(fmt.Sprintf("k%03d", i), "o", 0)
	}
	var scans, reads, trips int
	sent := &readCounter{}
	e.pc.AddHook(sent)
	got := 0
	err := e.p.ScanWith(c, provider.ScanOptions{Pace: func(_ context.Context, s, r int) error {
		scans, reads, trips = scans+s, reads+r, trips+1
		return nil
	}}, func(batch []provider.Lock) error {
		got += len(batch)
		return nil
	})
	require.NoError(t, err)
	require.GreaterOrEqual(t, got, n)
	require.Equal(t, provider.ReadsPerKey*got, reads, "ReadsPerKey reads per key read told to Pace")
	require.Equal(t, int64(reads), sent.n.Load(), "the reads told to Pace are the reads sent")
	// Each SCAN after the first rides with the reads of the batch before; the last batch's reads
	// go alone, unless the last SCAN found none of ours (the server is shared with other tests,
	// whose keys a SCAN may examine without a match).
	require.Contains(t, []int{scans, scans + 1}, trips, "each SCAN after the first rides with the reads of the batch before")

	stop := errors.New("over budget")
	err = e.p.ScanWith(c, provider.ScanOptions{Pace: func(context.Context, int, int) error { return stop }},
		func([]provider.Lock) error { t.Fatal("nothing is read once Pace refused"); return nil })
	require.ErrorIs(t, err, stop)
}

// readCounter is a go-redis hook that counts the reads of locks and records sent: GET and PTTL.
type readCounter struct{ n atomic.Int64 }

func (r *readCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *readCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.count([]redis.Cmder{cmd})
		return next(ctx, cmd)
	}
}

func (r *readCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.count(cmds)
		return next(ctx, cmds)
	}
}

func (r *readCounter) count(cmds []redis.Cmder) {
	for _, cmd := range cmds {
		if name := cmd.Name(); name == "get" || name == "pttl" {
			r.n.Add(1)
		}
	}
}

func TestReadReportsFoundAndAbsent(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	e.set("here", "o", time.Minute)
	found, absent, err := e.p.Read(c, []string{"here", "missing"})
	require.NoError(t, err)
	require.Len(t, found, 1)
	require.Equal(t, "here", found[0].Key)
	require.Equal(t, []string{"missing"}, absent)
}

func TestPrintableQuotesWhatDoesNotPrint(t *testing.T) {
	for in, want := range map[string]string{"worker-1": "worker-1", "": `""`, "a b": `"a b"`, "x\x1b[2J": `"x\x1b[2J"`,
		`"x"`: `"\"x\""`, `a"b`: `a"b`, "a\x9bb": `"a\x9bb"`, "\xff": `"\xff"`} {
		require.Equal(t, want, provider.Printable(in), "Printable(%q)", in)
	}
}

// A holder record's fields are whatever was written to Redis: the process they name reaches the
// operator's terminal (console, dialog, audit) with every field escaped.
func TestHolderStringEscapesEveryField(t *testing.T) {
	h := provider.Holder{Host: "web\x1b[2J", PID: 7, Program: "svc\n", Client: "go\x1b]52;c;x\a"}
	require.Equal(t, `"svc\n" (pid 7 on "web\x1b[2J", "go\x1b]52;c;x\a" client)`, h.String())
	require.Equal(t, "medusa-worker (pid 4242 on web-1, bridge client)",
		provider.Holder{Host: "web-1", PID: 4242, Program: "medusa-worker", Client: provider.ClientBridge}.String())
}

// A lock of ours keeps its holder record in List and Get, and HolderRecord calls it current,
// after a re-entry by the same owner (which writes its own claim) and the first lease's
// renewals (which move the lock's expiry but not the expiry the re-entry's claim noted): a
// check of the record against the lock must not take it for a stale one.
func TestOurRecordSurvivesASameOwnerReentryAndRenewals(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	lease, err := e.p.AcquireLease(c, []string{"k"}, provider.LeaseOptions{Owner: "w", Expire: time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = lease.Release(context.Background()) })
	require.NoError(t, e.p.Acquire(c, []string{"k"}, provider.AcquireOptions{Owner: "w", Expire: time.Minute}))
	reentered := e.rdb.PExpireTime(c, e.key("k")).Val()
	require.Eventually(t, func() bool { return e.rdb.PExpireTime(c, e.key("k")).Val() != reentered },
		5*time.Second, 10*time.Millisecond, "the lease's renewal never moved the lock's expiry")

	l, ok, err := e.p.Get(c, "k")
	require.NoError(t, err)
	require.True(t, ok)
	require.NotNil(t, l.Record, "Get shows the record of our live lock")
	locks, err := e.p.List(c)
	require.NoError(t, err)
	require.Len(t, locks, 1)
	require.NotNil(t, locks[0].Record, "List shows the record of our live lock")
	rec, ok, err := e.p.HolderRecord(c, "k")
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, rec.Current, "locktui get says the record of our live lock is current")
}

// stockTake takes lock key k for owner as stock Medusa does: SET key owner NX [EX secs] (0: no
// expiry). Stock writes no holder record and touches none.
func (e *env) stockTake(k, owner string, secs int) {
	e.t.Helper()
	args := []any{"SET", e.key(k), owner, "NX"}
	if secs > 0 {
		args = append(args, "EX", secs)
	}
	require.NoError(e.t, e.rdb.Do(context.Background(), args...).Err(), "stock's SET NX of %q", k)
}

// requireNoRecord asserts that Get, Read and List all show lock key k without a holder record.
func (e *env) requireNoRecord(k string) {
	e.t.Helper()
	c := ctx(e.t)
	l, ok, err := e.p.Get(c, k)
	require.NoError(e.t, err)
	require.True(e.t, ok, "%q is held", k)
	require.Nil(e.t, l.Record, "Get shows no holder record for %q", k)
	found, _, err := e.p.Read(c, []string{k})
	require.NoError(e.t, err)
	require.Len(e.t, found, 1)
	require.Nil(e.t, found[0].Record, "Read shows no holder record for %q", k)
	locks, err := e.p.List(c)
	require.NoError(e.t, err)
	for _, l := range locks {
		if l.Key == k {
			require.Nil(e.t, l.Record, "List shows no holder record for %q", k)
		}
	}
}

// A stock process that releases our lock under an owner id it shares with us ("*", or a named
// owner), and takes the key again with SET NX, leaves our holder record in place: stock writes
// and deletes none. The record still names the lock's owner, but not its expiry (the record
// keeps the one our hold gave it), so Get, Read and List must show no holder record rather
// than name our process as the holder of stock's lock.
var stockRetakes = []struct {
	name  string
	owner string
	ours  time.Duration // our hold's Expire
	stock int           // stock's EX in seconds; 0: none
	after time.Duration // how long after our take stock takes the key again
}{
	{"anonymous owner, shorter TTL", "*", time.Minute, 30, 0},
	{"named owner, shorter TTL", "w", time.Minute, 30, 0},
	{"named owner, stock without expiry", "w", time.Minute, 0, 0},
	{"named owner, ours without expiry", "w", provider.NoExpiry, 30, 0},
	{"anonymous owner, same TTL a moment later", "*", time.Minute, 60, 100 * time.Millisecond},
}

func TestAStockRetakeUnderASharedOwnerShowsNoHolderRecord(t *testing.T) {
	for _, tc := range stockRetakes {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			c := ctx(t)
			require.NoError(t, e.p.Acquire(c, []string{"k"}, provider.AcquireOptions{Owner: tc.owner, Expire: tc.ours}))
			time.Sleep(tc.after)
			// Stock's release: DEL when GET is the owner; the record stays.
			e.requireOwner("k", tc.owner)
			require.NoError(t, e.rdb.Del(c, e.key("k")).Err())
			e.stockTake("k", tc.owner, tc.stock)
			require.Equal(t, int64(1), e.rdb.Exists(c, provider.RecordKey(e.key("k"))).Val(), "our record outlives our hold")

			e.requireNoRecord("k")
			rec, ok, err := e.p.HolderRecord(c, "k")
			require.NoError(t, err)
			require.True(t, ok)
			require.False(t, rec.Current, "locktui get says the record is not current")
		})
	}
}

// Every script of ours that sets a lock's expiry gives its holder record the same one
// (lib.lua): a take, a re-entry that changes the TTL or drops it, a renewal and
// a give-back after a failed acquisition. Get shows the record after each; this is what lets
// a read tell our record from one a stock re-take left behind.
func TestOurScriptsGiveTheRecordTheLocksExpiry(t *testing.T) {
	e := newEnv(t, &provider.Options{MaximumRetryInterval: 20 * time.Millisecond})
	c := ctx(t)
	requireFollows := func(k, step string) {
		t.Helper()
		lockAt := e.rdb.PExpireTime(c, e.key(k)).Val()
		recAt := e.rdb.PExpireTime(c, provider.RecordKey(e.key(k))).Val()
		require.Equal(t, lockAt, recAt, "%s: the record's expiry is the lock's", step)
		l, ok, err := e.p.Get(c, k)
		require.NoError(t, err)
		require.True(t, ok)
		require.NotNil(t, l.Record, "%s: Get shows the record", step)
	}
	take := func(k string, expire time.Duration) {
		t.Helper()
		require.NoError(t, e.p.Acquire(c, []string{k}, provider.AcquireOptions{Owner: "w", Expire: expire}))
	}

	take("k", time.Minute)
	requireFollows("k", "a take")
	take("k", 30*time.Second)
	requireFollows("k", "a re-entry with another TTL")
	take("k", provider.NoExpiry)
	requireFollows("k", "a re-entry without expiry")
	take("k", 45*time.Second)
	requireFollows("k", "a re-entry that gives an expiry back")
	take("p", provider.NoExpiry)
	requireFollows("p", "a take without expiry")

	// A failed acquisition of k and a busy key gives k back its lifetime and record.
	e.set("busy", "other", time.Minute)
	call, cancel := context.WithTimeout(c, 100*time.Millisecond)
	defer cancel()
	err := e.p.Acquire(call, []string{"k", "busy"}, provider.AcquireOptions{Owner: "w", Expire: 5 * time.Second})
	require.ErrorIs(t, err, provider.ErrNotAcquired)
	require.Greater(t, e.rdb.PTTL(c, e.key("k")).Val(), 30*time.Second, "k got its lifetime back")
	requireFollows("k", "a give-back")

	lease, err := e.p.AcquireLease(c, []string{"r"}, provider.LeaseOptions{Owner: "w", Expire: time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = lease.Release(context.Background()) })
	first := e.rdb.PExpireTime(c, e.key("r")).Val()
	require.Eventually(t, func() bool { return e.rdb.PExpireTime(c, e.key("r")).Val() != first },
		5*time.Second, 10*time.Millisecond, "the lease was never renewed")
	requireFollows("r", "a renewal")
}
