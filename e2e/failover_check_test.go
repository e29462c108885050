//go:build linux

package e2e

import (
	"cmp"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locktui/locktui/e2e/chaos"
)

// heldSpan is one belief of a holder in the journal: from its enter to its exit or lost.
type heldSpan struct {
	holder     string
	enter, end int64
	how        chaos.EventKind // Exit or Lost; "" while open
}

// spans pairs every enter in events with the exit or lost of the same holder that ends it.
func spans(events []chaos.Event) []heldSpan {
	sorted := slices.Clone(events)
	slices.SortStableFunc(sorted, func(a, b chaos.Event) int { return cmp.Compare(a.T, b.T) })
	open := map[string]int{} // holder → index in out
	var out []heldSpan
	for _, e := range sorted {
		switch e.Ev {
		case chaos.Enter:
			open[e.Holder] = len(out)
			out = append(out, heldSpan{holder: e.Holder, enter: e.T})
		case chaos.Exit, chaos.Lost:
			if i, ok := open[e.Holder]; ok {
				out[i].end, out[i].how = e.T, e.Ev
				delete(open, e.Holder)
			}
		}
	}
	return out
}

// check reads the journal and checks that no two holders believed at once, every belief ended,
// each failover (checkFailover) and the run started while the master was down (checkRideOut),
// and logs the timings.
func (f *failoverRun) check(fos []*failover, grants leaseGrants) {
	t := f.t
	fail := t.Errorf
	events, err := chaos.ReadLogs(f.logFiles()...)
	if err != nil {
		t.Fatalf("e2e: %v", err)
	}
	report := chaos.Check(events)
	t.Log(report.String())
	if !report.OK() {
		fail("failover: the journal shows holders believing at once:\n%s", report)
	}
	if report.Open > 0 {
		fail("failover: %d beliefs never ended, though every holder stopped", report.Open)
	}
	held := spans(events)
	for _, fo := range fos {
		f.checkFailover(fo, held, fail)
	}
	f.checkRideOut(fos[0], fail)
	entered := 0
	for _, s := range held {
		if chaos.HolderKind(s.holder) == kindNode && s.enter <= grants.at {
			entered++
		}
	}
	t.Logf("failover: the bridge granted %d leases and lost %d; its clients' jobs started %d times", grants.granted, grants.lost, entered)
	t.Log(f.timeline())
}

// checkFailover checks one failover in the beliefs of the journal and logs its timings: the
// holders of the killed master stopped believing within a TTL of the pause, when Redis could
// expire their key; a holder entered on the new master.
func (f *failoverRun) checkFailover(fo *failover, held []heldSpan, fail func(string, ...any)) {
	t := f.t
	t.Logf("failover %d: %s → %s: kill to promotion %s (every sentinel %s); writes paused %s before the kill",
		fo.n, fo.from, fo.to, ms(fo.promoted-fo.killed), ms(fo.agreed-fo.killed), ms(fo.killed-fo.paused))
	if fo.rejoined != 0 {
		t.Logf("failover %d: %s restarted %s after the promotion, a replica again %s later",
			fo.n, fo.from, ms(fo.restarted-fo.promoted), ms(fo.rejoined-fo.restarted))
	}
	// The holders of the old master: inside at the pause, or entered before the promotion
	// (acquired before the pause, the enter logged after it: there was no master between the
	// kill and the promotion).
	runOn := fo.paused + int64(failoverExpire)
	old := 0
	for _, s := range held {
		if s.enter > fo.promoted || (s.how != "" && s.end <= fo.paused) {
			continue
		}
		old++
		switch {
		case s.how == "":
			fail("failover %d: %s, a holder of the killed master, never stopped believing", fo.n, s.holder)
		case s.end > runOn:
			fail("failover %d: %s, a holder of the killed master, believed until %s after the pause (%s), past the TTL, when Redis may expire its key",
				fo.n, s.holder, ms(s.end-fo.paused), s.how)
		}
		t.Logf("failover %d: %s held the key of the old master from %s before the kill; %s at kill %+d ms, promotion %+d ms",
			fo.n, s.holder, ms(fo.killed-s.enter), told(s.how), (s.end-fo.killed)/1e6, (s.end-fo.promoted)/1e6)
	}
	if old == 0 {
		fail("failover %d: the journal shows no holder inside at the kill (the test saw %s)", fo.n, strings.Join(fo.inside, ", "))
	}
	// Told: the losses between the pause and the next step.
	for _, s := range held {
		if s.how == chaos.Lost && s.end > fo.paused && s.end <= fo.next {
			t.Logf("failover %d: %s told it lost the key (entered kill %+d ms) at kill %+d ms, promotion %+d ms",
				fo.n, s.holder, (s.enter-fo.killed)/1e6, (s.end-fo.killed)/1e6, (s.end-fo.promoted)/1e6)
		}
	}
	// Work on the new master.
	byKind := map[string]int{}
	var first *heldSpan
	for i, s := range held {
		if s.enter > fo.promoted && s.enter <= fo.next {
			byKind[chaos.HolderKind(s.holder)]++
			if first == nil {
				first = &held[i]
			}
		}
	}
	if first == nil {
		fail("failover %d: no holder entered on the new master %s", fo.n, fo.to)
		return
	}
	t.Logf("failover %d: on the new master, the first holder (%s) entered %s after the promotion; %s in %s",
		fo.n, first.holder, ms(first.enter-fo.promoted), countsLine(byKind), ms(fo.next-fo.promoted))
}

// checkRideOut checks that the run started while the master was down succeeded once the new
// master answered.
func (f *failoverRun) checkRideOut(fo *failover, fail func(string, ...any)) {
	r := fo.rideOut
	if r == nil {
		return
	}
	if r.res.code != 0 {
		fail("failover %d: `locktui run %s --timeout %s -- true`, started %s after the kill (master down), exited %d after %s (promotion %+d ms), want 0 once the new master answers:\n%s",
			fo.n, failoverRideOutKey, failoverRideOut, ms(r.start-fo.killed), r.res.code, ms(r.end-r.start),
			(r.end-fo.promoted)/1e6, strings.TrimSpace(r.res.stderr))
		return
	}
	f.t.Logf("failover %d: the run started %s after the kill succeeded %s after the promotion",
		fo.n, ms(r.start-fo.killed), ms(r.end-fo.promoted))
}

// told says how a belief ended.
func told(how chaos.EventKind) string {
	switch how {
	case chaos.Lost:
		return "told it lost the key"
	case chaos.Exit:
		return "finished its work"
	default:
		return "still believing"
	}
}

// leaseGrants is what the bridge's /metrics said at one moment: the leases it granted and the
// leases it lost.
type leaseGrants struct {
	granted, lost int
	at            int64 // chaos clock
}

// bridgeGrants reads the bridge's lease counts from /metrics. A bridge client discards a grant
// that arrives after its own deadline for it, so more grants than the clients' enters say that
// grants were thrown away. Errors are logged only: the counts explain, they check nothing.
func bridgeGrants(t *testing.T, b *bridgeProc) leaseGrants {
	g := leaseGrants{at: chaos.MonoNow()}
	addr := strings.TrimSuffix(strings.TrimPrefix(b.URL, "ws://"), "/ws")
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Logf("failover: bridge metrics: %v", err)
		return g
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Logf("failover: bridge metrics: %v", err)
		return g
	}
	for line := range strings.Lines(string(body)) {
		name, value, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		n, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		switch name {
		case `locktui_bridge_requests_total{op="lease",result="ok"}`:
			g.granted = int(n)
		case "locktui_bridge_leases_lost_total":
			g.lost = int(n)
		}
	}
	return g
}
