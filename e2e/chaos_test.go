//go:build linux

package e2e

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/e2e/chaos"
	"github.com/locktui/locktui/internal/testsupport/redistest"
)

// Settings of a chaos run, read from the environment by TestChaos (`make chaos` sets them).
const (
	// chaosDurationEnv is how long the faults go on (a Go duration); default chaosShort.
	chaosDurationEnv = "LOCKTUI_CHAOS_DURATION"
	// chaosSeedEnv seeds the schedule (a uint64) to replay a run; default random.
	chaosSeedEnv = "LOCKTUI_CHAOS_SEED"
	// chaosKeepEnv, when set to a directory, receives the run's logs (else they are copied to
	// a temporary directory only when the run fails).
	chaosKeepEnv = "LOCKTUI_CHAOS_KEEP"
)

// The workload: a few shared keys, short leases and short work, so that a 2-core machine makes
// about 100 acquisitions a second in all.
const (
	chaosShort    = 35 * time.Second // the run of `go test ./e2e/...`
	chaosKeyCount = 4
	chaosTTL      = 2 * time.Second // every lease and PX: the longest TTL in use
	chaosWait     = 3 * time.Second // execute timeout, locktui run --timeout
	chaosWork     = 10 * time.Millisecond
	// chaosMaxRetry caps the Go holders' backoff (stock's 1 s by default): a key left behind
	// by a killed or cut-off holder is free again within a TTL, and waiters that back off to a
	// second would leave it idle for much of the run.
	chaosMaxRetry = 250 * time.Millisecond
	// Of the acquisitions of the slow jobs (see chaosHolder.slow), on chaosSlowKey,
	// chaosLongPercent work chaosLongWork/2 to chaosLongWork: across renewals and well beyond
	// the TTL.
	chaosSlowKey     = "chaos:slow"
	chaosLongWork    = 3 * chaosTTL
	chaosLongPercent = 50
	chaosGrace       = 200 * time.Millisecond // locktui run --grace: SIGKILL this long after SIGTERM
	chaosPollEvery   = time.Millisecond
	chaosPollWork    = 5 * time.Millisecond
	// chaosPollRest is the poller's pause after each of its acquisitions: polling every
	// millisecond, it would otherwise win nearly every key from the holders that back off.
	chaosPollRest = 25 * time.Millisecond
	// chaosMinRate is the acquisitions per second of fault time a run must reach: the issue's
	// 10,000 in 2 minutes for a long run; a short run, which shares the machine with the rest
	// of `make test` under the race detector, a quarter of that.
	chaosMinRate      = 10000.0 / 120
	chaosMinRateShort = chaosMinRate / 4
)

// How many holders of each kind a run has.
var chaosHolders = []struct {
	kind string
	n    int
}{{kindGo, 6}, {kindRun, 2}, {kindPoller, 1}, {kindStock, 2}, {kindNode, 3}}

// chaosRun is the state of one run; only the test's goroutine touches it, except for the free
// checks (see checkFreed), which lock mu.
type chaosRun struct {
	t    *testing.T
	rng  *rand.Rand
	seed uint64
	dir  string // the logs
	keys []string

	srv   *redistest.Server
	rdb   *redis.Client // straight to Redis: the free checks
	sched *chaos.Log    // the scheduler's own log: killed events

	holderBin, locktuiBin, node, compat, root string
	holders                                   []*chaosHolder
	bridge                                    *chaosBridge

	journal        []journalEntry // what the scheduler did, for the report
	killed         map[string]int // kills of the schedule, by holder kind
	restartKills   int            // stock holders killed before a Redis restart
	faults         map[string]int // fault spells, by fault
	restarts       int
	bridgeRestarts map[string]int // by signal
	uncleanBridge  int            // SIGTERMs whose drain was cut short
	aimed          int            // kills that hit a holder while it believed it held a key
	aimedFaults    int            // fault spells on the link of a holder in a long work

	checks   sync.WaitGroup
	mu       sync.Mutex
	slow     []string                 // free checks that failed
	freed    map[string]int           // free checks that passed, by holder kind
	maxFreed map[string]time.Duration // the slowest of them, from the kill
	// bridgeFaulted is when the last fault spell on the bridge's link to Redis began.
	bridgeFaulted time.Time
}

// journalEntry is one thing the scheduler did, on the chaos clock.
type journalEntry struct {
	t      int64
	holder string // "" for the whole run (a Redis restart)
	what   string
}

// note adds an entry to the journal.
func (r *chaosRun) note(holder, format string, args ...any) {
	r.journal = append(r.journal, journalEntry{t: chaos.MonoNow(), holder: holder, what: fmt.Sprintf(format, args...)})
}

// TestChaos is the chaos run of the e2e suite: Go provider processes, `locktui run` loops, a
// polling foreign process and bridge clients (Node, through the bridge) on faultproxied links,
// and stock Medusa processes straight on Redis, take a few shared keys again and again while a
// scheduler SIGKILLs holders, blackholes, delays and cuts their links and the bridge's link to
// Redis, restarts the bridge (SIGTERM and SIGKILL) and restarts Redis (see
// chaos_schedule_test.go, chaos_bridge_test.go). Every holder logs when it starts and stops
// believing it holds a key (package e2e/chaos); at the end the logs must show no enter made
// while another holder believed, at least the minimum rate of acquisitions and every kind of
// holder at work, and the key of every killed holder must have been free again in time: one TTL
// for Go holders, 5 s for bridge clients.
//
// The run lasts chaosShort, or $LOCKTUI_CHAOS_DURATION (`make chaos DURATION=10m`); the seed of
// its schedule is logged first and replayed with $LOCKTUI_CHAOS_SEED (the processes' own timing
// still varies).
func TestChaos(t *testing.T) {
	duration, seed := chaosSettings(t)
	minRate, long := chaosMinRateShort, duration > chaosShort
	if long {
		minRate = chaosMinRate
	}
	t.Logf("chaos: seed %d (replay with %s=%d), faults for %s", seed, chaosSeedEnv, seed, duration)
	r := newChaosRun(t, seed)
	r.startChaosBridge()
	for _, spec := range chaosHolders {
		for slot := 1; slot <= spec.n; slot++ {
			h := &chaosHolder{kind: spec.kind, slot: slot}
			switch spec.kind {
			case kindStock: // straight to Redis
			case kindNode:
				h.proxy = startChaosProxy(t, r.bridge.addr)
			default:
				h.proxy = startChaosProxy(t, r.srv.Addr)
			}
			r.holders = append(r.holders, h)
			r.start(h)
		}
	}

	began := time.Now()
	r.schedule(duration)
	for _, h := range r.faultTargets() {
		r.restoreLink(h)
	}
	clean := 0
	for _, h := range r.holders {
		if r.stop(h) {
			clean++
		}
	}
	r.stopBridgeProc(true)
	r.checks.Wait()
	t.Logf("chaos: faults ran %s; %d of %d holders stopped on their own at the end", time.Since(began).Round(time.Millisecond), clean, len(r.holders))

	events, err := chaos.ReadLogs(r.logFiles()...)
	if err != nil {
		r.keepLogs(true)
		t.Fatalf("e2e: %v", err)
	}
	report := chaos.Check(events)
	r.summary(report, events, duration)
	enters := 0
	for _, n := range report.Enters {
		enters += n
	}
	want := int(minRate * duration.Seconds())
	failed := false
	if !report.OK() {
		failed = true
		t.Errorf("%s\n%s", report, r.context(report))
	}
	if enters < want {
		failed = true
		t.Errorf("chaos: %d acquisitions in %s, want at least %d (%.0f/s)", enters, duration, want, minRate)
	}
	for _, spec := range chaosHolders {
		if report.EntersByKind[spec.kind] == 0 {
			failed = true
			t.Errorf("chaos: no %s holder ever took a key", spec.kind)
		}
	}
	r.mu.Lock()
	for _, s := range r.slow {
		failed = true
		t.Error(s)
	}
	r.mu.Unlock()
	r.keepLogs(failed)
}

// chaosSettings reads the run's duration and seed from the environment.
func chaosSettings(t *testing.T) (time.Duration, uint64) {
	duration := chaosShort
	if s := os.Getenv(chaosDurationEnv); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 5*time.Second {
			t.Fatalf("e2e: %s=%q: want a duration of at least 5s, e.g. 2m", chaosDurationEnv, s)
		}
		duration = d
	}
	seed := rand.Uint64()
	if s := os.Getenv(chaosSeedEnv); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("e2e: %s=%q: want an unsigned integer", chaosSeedEnv, s)
		}
		seed = n
	}
	return duration, seed
}

// newChaosRun starts Redis and gathers what the holders need.
func newChaosRun(t *testing.T, seed uint64) *chaosRun {
	node, compat := nodeEnv(t)
	root, err := moduleRoot()
	if err != nil {
		t.Fatalf("e2e: %v", err)
	}
	r := &chaosRun{
		t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, seed>>1|1)), dir: t.TempDir(),
		holderBin: chaosHolderBinary(t), locktuiBin: binaries(t).locktui, node: node, compat: compat, root: root,
		killed: map[string]int{}, faults: map[string]int{}, bridgeRestarts: map[string]int{}, freed: map[string]int{}, maxFreed: map[string]time.Duration{},
	}
	for i := range chaosKeyCount {
		r.keys = append(r.keys, "chaos:"+strconv.Itoa(i))
	}
	r.srv = redistest.Start(t)
	r.rdb = r.srv.Client(t)
	if r.sched, err = chaos.OpenLog(filepath.Join(r.dir, "scheduler.jsonl")); err != nil {
		t.Fatalf("e2e: %v", err)
	}
	t.Cleanup(func() { _ = r.sched.Close() })
	t.Cleanup(r.checks.Wait) // before the client closes (cleanups run last first)
	return r
}

// summary logs the counts of the run.
func (r *chaosRun) summary(report chaos.Report, events []chaos.Event, duration time.Duration) {
	t := r.t
	lost := map[string]int{}
	for _, e := range events {
		if e.Ev == chaos.Lost {
			lost[chaos.HolderKind(e.Holder)]++
		}
	}
	t.Log(chaos.Report{Events: report.Events, Start: report.Start, End: report.End, Enters: report.Enters,
		EntersByKind: report.EntersByKind, Killed: report.Killed, Open: report.Open}.String())
	total := 0
	for _, n := range report.Enters {
		total += n
	}
	t.Logf("chaos: %d acquisitions in %s of faults (%.0f/s): %s", total, duration,
		float64(total)/duration.Seconds(), countsLine(report.EntersByKind))
	t.Logf("chaos: losses told %s", countsLine(lost))
	t.Logf("chaos: SIGKILLs %s (%d while inside), and %d stock holders before the Redis restarts; fault spells %s (%d on a long work); Redis restarts %d; bridge restarts %s (%d drains cut short)",
		countsLine(r.killed), r.aimed, r.restartKills, countsLine(r.faults), r.aimedFaults, r.restarts,
		countsLine(r.bridgeRestarts), r.uncleanBridge)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, kind := range slices.Sorted(maps.Keys(r.freed)) {
		t.Logf("chaos: keys of killed %s holders freed %d times, the slowest %s after the kill",
			kind, r.freed[kind], r.maxFreed[kind].Round(time.Millisecond))
	}
	t.Logf("chaos: %d keys of killed holders freed too late", len(r.slow))
}

// countsLine formats counts as "a 1, b 2" by name.
func countsLine(m map[string]int) string {
	parts := []string{}
	for _, name := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", name, m[name]))
	}
	return cmp.Or(strings.Join(parts, ", "), "none")
}

// context returns the journal entries around each violation that concern its two holders or
// the whole run: the faults that were active.
func (r *chaosRun) context(report chaos.Report) string {
	var s strings.Builder
	for _, v := range report.Violations {
		fmt.Fprintf(&s, "around the violation on %q at +%v (%s entered, %s believed):\n", v.Key,
			time.Duration(v.At-report.Start), v.Holder, v.Believer)
		slots := []string{"", slotOf(v.Holder), slotOf(v.Believer)}
		for _, e := range r.journal {
			if e.t < v.Since-int64(5*time.Second) || e.t > v.At+int64(time.Second) || !slices.Contains(slots, e.holder) {
				continue
			}
			fmt.Fprintf(&s, "  +%v %s %s\n", time.Duration(e.t-report.Start), cmp.Or(e.holder, "run"), e.what)
		}
	}
	return s.String()
}

// slotOf returns the slot part of a holder id: "go-1" for "go-1#3".
func slotOf(id string) string {
	slot, _, _ := strings.Cut(id, "#")
	return slot
}

// keepLogs copies the logs to $LOCKTUI_CHAOS_KEEP, or, when the run failed, to a new temporary
// directory, and says where.
func (r *chaosRun) keepLogs(failed bool) {
	dir := os.Getenv(chaosKeepEnv)
	if dir == "" && !failed {
		return
	}
	var err error
	if dir == "" {
		dir, err = os.MkdirTemp("", "locktui-chaos-")
	} else {
		err = os.MkdirAll(dir, 0o755)
	}
	if err == nil {
		err = os.CopyFS(dir, os.DirFS(r.dir))
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "journal.txt"), []byte(r.journalText()), 0o644)
	}
	if err != nil {
		r.t.Logf("chaos: could not keep the logs: %v", err)
		return
	}
	r.t.Logf("chaos: logs and journal kept in %s", dir)
}

// journalText renders the journal, one entry a line, on the chaos clock.
func (r *chaosRun) journalText() string {
	var s strings.Builder
	fmt.Fprintf(&s, "seed %d\n", r.seed)
	for _, e := range r.journal {
		fmt.Fprintf(&s, "%d %s %s\n", e.t, cmp.Or(e.holder, "run"), e.what)
	}
	return s.String()
}
