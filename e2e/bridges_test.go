//go:build linux

package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/e2e/chaos"
)

// bridgesLimit bounds each wait of TestClientsOfTwoBridgesOutliveOne on a loaded machine.
const bridgesLimit = 60 * time.Second

// Bridge clients given two bridges (half of them A first, half B first) and Go providers share
// a few keys, some jobs working across renewals, when bridge A is SIGKILLed. No holder enters
// while another believes (the chaos checker, on the shared monotonic clock): the clients of A
// are told their leases are lost when their connection dies, before the keys of those leases
// can be taken (they stay in Redis until their TTL), and every client of A goes on through B.
// It logs when the clients of A were told and entered again (docs/deployment.md).
func TestClientsOfTwoBridgesOutliveOne(t *testing.T) {
	r := newChaosRun(t, 1)
	token := "e2e-" + uuid.NewString()
	a := startBridgeWithToken(t, r.srv.URL, token)
	b := startBridgeWithToken(t, r.srv.URL, token)
	r.bridge = &chaosBridge{token: token} // nodeConfig reads the token from the run's bridge
	var viaA []*chaosHolder
	for slot := 1; slot <= 4; slot++ {
		h := &chaosHolder{kind: kindNode, slot: slot, bridgeURLs: []string{a.URL, b.URL}}
		if slot%2 == 0 {
			h.bridgeURLs = []string{b.URL, a.URL}
		} else {
			viaA = append(viaA, h)
		}
		r.holders = append(r.holders, h)
	}
	for slot := 1; slot <= 2; slot++ {
		r.holders = append(r.holders, &chaosHolder{kind: kindGo, slot: slot, proxy: startChaosProxy(t, r.srv.Addr)})
	}
	for _, h := range r.holders {
		r.start(h)
	}

	// Bridge A dies while its slow client (node-1, long jobs on the slow key) works inside one.
	slow := viaA[0]
	require.Eventually(t, func() bool {
		b, inside := openBelief(slow.log)
		return inside && chaos.MonoNow()-b.T > int64(200*time.Millisecond)
	}, bridgesLimit, 20*time.Millisecond, "bridge A's slow client inside a long job")
	killed := chaos.MonoNow()
	a.p.kill()
	// The run goes on until every client of A entered again (through B) and a Go holder took the
	// slow key after the kill.
	require.Eventually(t, func() bool {
		events, err := chaos.ReadLogs(r.logFiles()...)
		if err != nil {
			return false // a line being written
		}
		after := func(holder, key string) bool {
			return slices.ContainsFunc(events, func(e chaos.Event) bool {
				return e.Ev == chaos.Enter && e.T > killed && strings.HasPrefix(e.Holder, holder) && (key == "" || e.Key == key)
			})
		}
		return !slices.ContainsFunc(viaA, func(h *chaosHolder) bool { return !after(h.id, "") }) &&
			after(kindGo+"-", chaosSlowKey)
	}, bridgesLimit, 20*time.Millisecond, "every client of A entering again, and a Go holder the slow key")
	for _, h := range r.holders {
		r.stop(h)
	}

	events, err := chaos.ReadLogs(r.logFiles()...)
	if err != nil {
		t.Fatalf("e2e: %v", err)
	}
	report := chaos.Check(events)
	if !report.OK() {
		r.keepLogs(true)
		t.Fatalf("%s\n%s", report, r.context(report))
	}
	t.Logf("bridges: %s", report)
	for _, h := range viaA {
		var lost, again int64
		for _, e := range events {
			if e.Holder != h.id || e.T < killed {
				continue
			}
			if e.Ev == chaos.Lost && lost == 0 {
				lost = e.T
			}
			if e.Ev == chaos.Enter && again == 0 {
				again = e.T
			}
		}
		if h == slow && lost == 0 {
			t.Errorf("bridges: %s, inside a job when bridge A died, was never told its lease was lost", h.id)
		}
		told := "held nothing then"
		if lost != 0 {
			told = "told its lease was lost " + time.Duration(lost-killed).Round(time.Millisecond).String() + " after"
		}
		t.Logf("bridges: %s (A first) %s; entered again through B %s after the kill", h.id, told,
			time.Duration(again-killed).Round(time.Millisecond))
	}
}
