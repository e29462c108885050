//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locktui/locktui/e2e/chaos"
	"github.com/locktui/locktui/internal/testsupport/redistest"
)

// The workload and the bounds of TestSentinelFailover.
const (
	// failoverKey is the one key every holder takes.
	failoverKey = "failover:job"
	// failoverRideOutKey is the key of the run started while the master is down: a key of its
	// own, so that its success depends on the failover alone, not on winning the shared key
	// from four loops within its --timeout.
	failoverRideOutKey = "failover:ride-out"
	// failoverExpire is every lease's TTL: locktui run --expire, execute's expire.
	failoverExpire = 3 * time.Second
	// failoverHold: each holder holds the key failoverHold/2 to failoverHold (~700 ms).
	failoverHold = time.Second
	// failoverWait is locktui run's --timeout and execute's timeout in the loops.
	failoverWait = 10 * time.Second
	// failoverGrace is locktui run's default --grace for failoverExpire (a quarter of it).
	failoverGrace = failoverExpire / 4
	// failoverOnNew is how long the loops run at least on each new master before the next
	// step, and failoverWork bounds the wait for them to get to work (every holder at the start,
	// some holder on a new master).
	failoverOnNew = 3500 * time.Millisecond
	failoverWork  = 30 * time.Second
	// failoverPause is the CLIENT PAUSE WRITE before a kill: the kill comes well within it.
	failoverPause = 5 * time.Second
	// failoverSync bounds the replica's catching up with the paused master.
	failoverSync = 5 * time.Second
	// failoverAim bounds the wait for a holder to be inside before a kill.
	failoverAim = 10 * time.Second
	// failoverPromote bounds kill → promotion: about 3 s (2 s down-after, the vote, REPLICAOF
	// NO ONE); a split vote is retried 6 s later (twice the failover-timeout).
	failoverPromote = 20 * time.Second
	// failoverRejoin bounds restart → replica: the sentinels convert a restarted master about
	// 10 s after it is back (their INFO period; they wait 8 s).
	failoverRejoin = 40 * time.Second
	// failoverRideOut is the --timeout of the run started while the master is down.
	failoverRideOut = 15 * time.Second
)

// failoverRun is the state of TestSentinelFailover.
type failoverRun struct {
	t       *testing.T
	dir     string // the holders' logs
	dep     *redistest.Sentinel
	holders []*chaosHolder
	steps   []failoverStep
}

// failoverStep is one thing the test did or saw, on the chaos clock.
type failoverStep struct {
	t    int64
	what string
}

// failover is what the test recorded of one failover, on the chaos clock.
type failover struct {
	n                        int
	from, to                 string
	paused, killed, promoted int64
	agreed                   int64    // every sentinel names the new master
	inside                   []string // holders inside at the kill
	rideOut                  *rideOut // the run started while the master was down, if any
	restarted, rejoined      int64    // the old master restarted; back as a replica
	next                     int64    // the next failover's pause, or the end of the loops
}

// rideOut is the `locktui run` started while the master was down; its fields are set when
// done is closed.
type rideOut struct {
	done       chan struct{}
	res        result
	start, end int64
}

// note records a step now and returns its time.
func (f *failoverRun) note(format string, args ...any) int64 {
	now := chaos.MonoNow()
	f.steps = append(f.steps, failoverStep{t: now, what: fmt.Sprintf(format, args...)})
	return now
}

// monoOf converts a time.Time of the recent past to the chaos clock.
func monoOf(at time.Time) int64 { return chaos.MonoNow() - int64(time.Since(at)) }

// TestSentinelFailover runs the locks through two Sentinel failovers as an operator would run
// them: a master, a replica and three sentinels (internal/testsupport/redistest), the bridge and every
// `locktui run` on the Sentinel URL, two `locktui run --expire 3s` loops and two bridge clients
// looping execute with expire 3 on one key, each holding it ~700 ms and logging when it starts
// and stops believing (package e2e/chaos). While a holder is inside, the master is SIGKILLed;
// after the promotion the loops go on, the old master is restarted and the sentinels make it a
// replica, and the new master is killed in turn. The journal must show no two holders
// believing at once, every holder of a killed master stopped believing before its lease could
// be gone, and acquisitions on each new master; a run started while the master is down must
// succeed once the new master answers.
func TestSentinelFailover(t *testing.T) {
	began := time.Now()
	node, compat := nodeEnv(t)
	root, err := moduleRoot()
	if err != nil {
		t.Fatalf("e2e: %v", err)
	}
	bins, holderBin := binaries(t), chaosHolderBinary(t)
	f := &failoverRun{t: t, dir: t.TempDir(), dep: redistest.StartSentinel(t)}
	t.Cleanup(func() {
		if t.Failed() {
			f.keepLogs()
		}
	})
	f.note("deployment ready (%s after the test began): %s", time.Since(began).Round(time.Millisecond), f.dep.URL)
	b := startBridge(t, f.dep.URL)
	for slot := 1; slot <= 2; slot++ {
		f.startRunLoop(slot, holderBin, bins.locktui)
		f.startBridgeClient(slot, node, compat, root, b)
	}
	f.awaitKinds(chaos.MonoNow(), 2, "both kinds of holder to take the key")
	f.note("both kinds of holder took the key (%s after the test began)", time.Since(began).Round(time.Millisecond))

	first := f.failover(1, bins.locktui)
	f.rejoin(first)
	f.awaitOnNew(first)
	second := f.failover(2, "")
	f.awaitOnNew(second)
	first.next = second.paused
	second.next = f.note("stopping the holders")
	grants := bridgeGrants(t, b)
	f.stopHolders()
	f.note("holders stopped")

	<-first.rideOut.done
	f.check([]*failover{first, second}, grants)
	t.Logf("failover: the test took %s", time.Since(began).Round(time.Millisecond))
}

// startRunLoop starts the run loop run-slot: `locktui run KEY --expire 3s -- holder child`
// again and again on the Sentinel URL (e2e/chaos/holder runloop).
func (f *failoverRun) startRunLoop(slot int, holderBin, locktui string) {
	h := &chaosHolder{kind: kindRun, slot: slot, id: fmt.Sprintf("%s-%d", kindRun, slot)}
	h.log = filepath.Join(f.dir, h.id+".jsonl")
	hold := failoverHold.String()
	cmd := exec.Command(holderBin, "runloop", "--redis", f.dep.URL, "--log", h.log, "--holder", h.id,
		"--keys", failoverKey, "--locktui", locktui, "--expire", failoverExpire.String(),
		"--grace", failoverGrace.String(), "--timeout", failoverWait.String(),
		"--long", hold, "--long-percent", "100")
	h.p = startProc(f.t, h.id, cmd, procOptions{})
	f.holders = append(f.holders, h)
}

// startBridgeClient starts the bridge client node-slot: execute(KEY, job, {expire: 3}) again
// and again through the bridge (e2e/node/chaos-holder.js).
func (f *failoverRun) startBridgeClient(slot int, node, compat, root string, b *bridgeProc) {
	h := &chaosHolder{kind: kindNode, slot: slot, id: fmt.Sprintf("%s-%d", kindNode, slot)}
	h.log = filepath.Join(f.dir, h.id+".jsonl")
	cfg, err := json.Marshal(map[string]any{
		"compatDir": compat, "backend": backendBridge, "bridgeUrl": b.URL, "token": b.Token,
		"holder": h.id, "log": h.log, "keys": []string{failoverKey},
		"expire": failoverExpire.Seconds(), "timeout": failoverWait.Seconds(),
		"longMs": failoverHold.Milliseconds(), "longPercent": 100,
	})
	if err != nil {
		f.t.Fatalf("e2e: %v", err)
	}
	cmd := exec.Command(node, filepath.Join(root, "e2e", "node", "chaos-holder.js"), string(cfg))
	h.p = startProc(f.t, h.id, cmd, procOptions{})
	f.holders = append(f.holders, h)
}

// failover kills the master while a holder is inside and waits for the promotion. Before the
// kill it pauses the master's writes (CLIENT PAUSE WRITE) and waits until the replica has every
// write: asynchronous replication may lose the last acknowledged writes in a failover, a loss
// that docs/safety.md ("Failovers") puts outside the guarantee, and this test checks what the
// guarantee covers. When locktui is set, a `locktui run` is started while the master is down.
func (f *failoverRun) failover(n int, locktui string) *failover {
	t := f.t
	master := f.dep.Master(t)
	fo := &failover{n: n, from: master.Addr}
	for attempt := 1; ; attempt++ {
		f.awaitInside()
		fo.paused = monoOf(f.dep.PauseAndSync(t, master, failoverPause, failoverSync))
		if fo.inside = f.inside(); len(fo.inside) > 0 {
			break
		}
		// The holder left before the pause; writes were paused for nothing.
		master.Unpause(t)
		if attempt == 20 {
			t.Fatalf("e2e: failover %d: no holder was inside at any of %d pauses", n, attempt)
		}
	}
	f.steps = append(f.steps, failoverStep{fo.paused, fmt.Sprintf("failover %d: writes paused on %s, replica in sync", n, master.Addr)})
	master.Kill(t)
	fo.killed = f.note("failover %d: master %s SIGKILLed while %s inside", n, master.Addr, strings.Join(fo.inside, ", "))
	if locktui != "" {
		ride := &rideOut{done: make(chan struct{}), start: chaos.MonoNow()}
		fo.rideOut = ride
		go func() {
			defer close(ride.done)
			ctx, cancel := context.WithTimeout(context.Background(), failoverRideOut+10*time.Second)
			defer cancel()
			ride.res = runCommand(ctx, exec.Command(locktui, "run", failoverRideOutKey, "--redis", f.dep.URL,
				"--timeout", failoverRideOut.String(), "--", "true"))
			ride.end = chaos.MonoNow()
		}()
		t.Cleanup(func() { <-ride.done }) // no goroutine left behind, even after a Fatal
	}
	to, at := f.dep.AwaitFailover(t, master, failoverPromote)
	fo.to, fo.promoted = to.Addr, monoOf(at)
	f.steps = append(f.steps, failoverStep{fo.promoted, fmt.Sprintf("failover %d: %s promoted", n, to.Addr)})
	fo.agreed = f.note("failover %d: every sentinel names %s", n, to.Addr)
	return fo
}

// rejoin restarts the killed master of fo and waits until the sentinels made it a replica of
// the new one, in sync.
func (f *failoverRun) rejoin(fo *failover) {
	old := f.node(fo.from)
	old.Restart(f.t)
	fo.restarted = f.note("failover %d: %s restarted (an empty master)", fo.n, fo.from)
	f.dep.AwaitReplica(f.t, old, failoverRejoin)
	fo.rejoined = f.note("failover %d: %s is a replica of %s, in sync", fo.n, fo.from, fo.to)
}

// node returns the deployment's node at addr.
func (f *failoverRun) node(addr string) *redistest.Node {
	for _, n := range f.dep.Nodes {
		if n.Addr == addr {
			return n
		}
	}
	f.t.Fatalf("e2e: no node at %s", addr)
	return nil
}

// awaitOnNew waits until the loops have run failoverOnNew on fo's new master and a holder
// entered there.
func (f *failoverRun) awaitOnNew(fo *failover) {
	if wait := time.Duration(fo.promoted + int64(failoverOnNew) - chaos.MonoNow()); wait > 0 {
		time.Sleep(wait) // the loops' time on the new master: nothing to await
	}
	f.awaitKinds(fo.promoted, 1, fmt.Sprintf("failover %d: a holder to take the key on %s", fo.n, fo.to))
}

// awaitInside waits until a holder believes it holds the key.
func (f *failoverRun) awaitInside() {
	f.poll(failoverAim, "a holder inside", func() bool { return len(f.inside()) > 0 })
}

// inside returns the holders whose log ends inside the key.
func (f *failoverRun) inside() []string {
	var ids []string
	for _, h := range f.holders {
		if _, ok := openBelief(h.log); ok {
			ids = append(ids, h.id)
		}
	}
	return ids
}

// awaitKinds waits until n kinds of holder have entered since the chaos time since.
func (f *failoverRun) awaitKinds(since int64, n int, what string) {
	f.poll(failoverWork, what, func() bool { return len(f.kindsEntered(since)) >= n })
}

// kindsEntered returns the kinds of holder that entered after since.
func (f *failoverRun) kindsEntered(since int64) map[string]bool {
	events, err := chaos.ReadLogs(f.logFiles()...)
	if err != nil {
		f.t.Fatalf("e2e: %v", err)
	}
	seen := map[string]bool{}
	for _, e := range events {
		if e.Ev == chaos.Enter && e.T > since {
			seen[chaos.HolderKind(e.Holder)] = true
		}
	}
	return seen
}

// poll checks cond every 5 ms until it holds, failing the test after limit.
func (f *failoverRun) poll(limit time.Duration, what string, cond func() bool) {
	f.t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			f.t.Fatalf("e2e: waited %s for %s\n%s", limit, what, f.timeline())
		}
		time.Sleep(5 * time.Millisecond) // paces the polling of the logs
	}
}

// stopHolders ends every loop: SIGTERM to each holder's process group (a run loop's `locktui
// run` and its command get it too), then a clean exit is awaited.
func (f *failoverRun) stopHolders() {
	for _, h := range f.holders {
		h.p.signal(syscall.SIGTERM)
	}
	for _, h := range f.holders {
		switch {
		case !h.p.wait(failoverWait + stopGrace):
			f.t.Errorf("failover: %s did not exit within %s of SIGTERM", h.id, failoverWait+stopGrace)
		case h.p.err != nil:
			f.t.Errorf("failover: %s did not stop cleanly on SIGTERM: %v", h.id, h.p.err)
		}
	}
}

// logFiles returns the holders' logs that exist (a holder creates its log when it starts).
func (f *failoverRun) logFiles() []string {
	files := make([]string, 0, len(f.holders))
	for _, h := range f.holders {
		if _, err := os.Stat(h.log); err == nil {
			files = append(files, h.log)
		}
	}
	return files
}

// timeline renders the steps relative to the first one.
func (f *failoverRun) timeline() string {
	if len(f.steps) == 0 {
		return ""
	}
	var s strings.Builder
	s.WriteString("timeline:")
	for _, st := range f.steps {
		fmt.Fprintf(&s, "\n  +%-9s %s", time.Duration(st.t-f.steps[0].t).Round(time.Millisecond), st.what)
	}
	return s.String()
}

// keepLogs copies the holders' logs and the timeline to a new temporary directory and says
// where.
func (f *failoverRun) keepLogs() {
	dir, err := os.MkdirTemp("", "locktui-failover-")
	if err == nil {
		err = os.CopyFS(dir, os.DirFS(f.dir))
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "timeline.txt"), []byte(f.timeline()+"\n"), 0o644)
	}
	if err != nil {
		f.t.Logf("failover: could not keep the logs: %v", err)
		return
	}
	f.t.Logf("failover: logs and timeline kept in %s", dir)
}

// ms formats a chaos-clock interval in milliseconds, signed.
func ms(d int64) string { return strconv.FormatInt(d/int64(time.Millisecond), 10) + " ms" }
