//go:build linux

package e2e

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/internal/freeport"
	"github.com/locktui/locktui/provider"
)

// The bridge in a chaos run.
const (
	// chaosBridgeFree is how soon the key of a SIGKILLed bridge client must be free again: the
	// bridge frees a connection's leases its client timeout (4 s by default) after the last
	// frame it received, then releases them.
	chaosBridgeFree = 5 * time.Second
	// chaosBridgeStop is the bridge's --shutdown-timeout; the scheduler kills a bridge that
	// has not exited chaosBridgeStop + stopGrace after SIGTERM.
	chaosBridgeStop = 5 * time.Second
	// The bridge restarts first after chaosFirstBridgeRestart (or a third of the run), then
	// every chaosBridgeRestartEvery, by SIGTERM and by SIGKILL in turn.
	chaosFirstBridgeRestart, chaosBridgeRestartEvery = 10 * time.Second, 20 * time.Second
)

// chaosBridge is the bridge of a chaos run: one cmd/bridge process at a time on a fixed
// loopback port, so that its clients (each behind a faultproxy of its own) reconnect to the
// bridge that replaces it. Its own link to Redis is a faultproxy too, which the scheduler faults
// like a holder's link (link).
type chaosBridge struct {
	addr  string // 127.0.0.1:PORT
	token string
	link  *chaosHolder // not a holder: its proxy is the bridge's link to Redis
	p     *proc
	gen   int
}

// startChaosBridge picks a port and starts the first bridge on it.
func (r *chaosRun) startChaosBridge() {
	t := r.t
	addr, err := freeport.Addr()
	if err != nil {
		t.Fatalf("e2e: %v", err)
	}
	r.bridge = &chaosBridge{
		addr: addr, token: "chaos-" + uuid.NewString(),
		link: &chaosHolder{kind: "bridge", slot: 1, id: "bridge-1", proxy: startChaosProxy(t, r.srv.Addr)},
	}
	r.launchBridge()
}

// launchBridge starts the bridge's next process and waits until it serves: /readyz for the
// first one, /healthz after a restart (its link to Redis may be faulted then; its clients
// reconnect either way).
func (r *chaosRun) launchBridge() {
	t, b := r.t, r.bridge
	b.gen++
	cmd := exec.Command(binaries(t).bridge, "--listen", b.addr, "--redis", "redis://"+b.link.proxy.Addr(),
		"--log-format", "json", "--log-level", "warn", "--events=false",
		"--shutdown-timeout", chaosBridgeStop.String())
	cmd.Env = append(os.Environ(), "BRIDGE_TOKEN="+b.token) // the token stays off the command line
	b.p = startProc(t, "bridge#"+strconv.Itoa(b.gen), cmd, procOptions{})
	endpoint := "/readyz"
	if b.gen > 1 {
		endpoint = "/healthz"
	}
	awaitHTTP200(t, "http://"+b.addr+endpoint, b.p)
}

// restartBridge stops the bridge, with SIGTERM (its drain: clients finish their jobs and
// release) or SIGKILL (its leases stop being renewed and expire; its clients stop believing by
// their leases' deadlines), and starts a new one on the same port. The free checks are let
// finish first: a drain holds the leases of dead clients longer than they allow.
func (r *chaosRun) restartBridge(kill bool) {
	r.checks.Wait()
	b := r.bridge
	how := "SIGTERM"
	if kill {
		how = "SIGKILL"
	}
	r.note("", "bridge: %s bridge#%d", how, b.gen)
	if kill {
		b.p.kill()
	} else {
		r.stopBridgeProc(false)
	}
	r.bridgeRestarts[how]++
	r.launchBridge()
	r.note("", "bridge: bridge#%d ready", b.gen)
}

// stopBridgeProc stops the bridge with SIGTERM. One that does not exit in time fails the test.
// During the run its drain may be cut short (exit 1: a client whose link is faulted cannot
// finish the close handshake, nor can a bridge whose link to Redis is faulted release); at the
// end, with every link restored, it must exit 0.
func (r *chaosRun) stopBridgeProc(atEnd bool) {
	p := r.bridge.p
	p.signal(syscall.SIGTERM)
	switch {
	case !p.wait(chaosBridgeStop + stopGrace):
		r.t.Errorf("chaos: bridge#%d did not exit within %s of SIGTERM", r.bridge.gen, chaosBridgeStop+stopGrace)
		p.kill()
	case p.err != nil && atEnd:
		r.t.Errorf("chaos: bridge#%d did not shut down cleanly after SIGTERM at the end: %v", r.bridge.gen, p.err)
	case p.err != nil:
		r.uncleanBridge++
		r.note("", "bridge: bridge#%d cut its drain short: %v", r.bridge.gen, p.err)
	}
}

// nodeConfig sets the fields of chaos-holder.js's config that make it a bridge client of the
// run's bridge, through the holder's own link (or of the holder's own bridgeURLs).
func (r *chaosRun) nodeConfig(h *chaosHolder, cfg map[string]any) {
	cfg["backend"] = backendBridge
	if h.bridgeURLs != nil {
		cfg["bridgeUrl"] = h.bridgeURLs
	} else {
		cfg["bridgeUrl"] = "ws://" + h.proxy.Addr() + "/ws"
	}
	cfg["token"] = r.bridge.token
	cfg["longMs"] = chaosLongWork.Milliseconds()
	cfg["longPercent"] = h.longPercent()
}

// checkNodeFreed checks that the key a killed bridge client believed it held leaves the owner
// it had at the kill within chaosBridgeFree, plus the upstream delays of its link and of the
// bridge's (the bridge counts from the last frame it received; a renewal reaches Redis that much
// later), plus maxLater when a fault spell begins on the bridge's link after the kill. The owner is read from Redis at once: the client believed it held
// the key, so that is its lease's owner (unless someone else took it, which Check reports).
func (r *chaosRun) checkNodeFreed(h *chaosHolder, killed time.Time) {
	b, ok := openBelief(h.log)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	owner, err := r.rdb.Get(ctx, provider.DefaultNamespace+b.Key).Result()
	cancel()
	if errors.Is(err, redis.Nil) { // already gone
		return
	}
	if err != nil {
		// Unreadable: Redis may be down for a restart, which wipes the key anyway (watchFree's
		// checks, once started, are waited for before one). The journal says it was skipped.
		r.note(h.id, "the check that its key %q is freed in time was skipped: %v", b.Key, err)
		return
	}
	limit := chaosBridgeFree + time.Duration(h.upDelay+r.bridge.link.upDelay)
	r.watchFree(h.id, b.Key, owner, killed, limit, func() time.Duration {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.bridgeFaulted.After(killed) {
			return maxLater
		}
		return 0
	})
}

// maxLater is what a fault on the bridge's link that begins after a bridge client's kill may
// add to the time its key takes to be free: the bridge's release, or its last renewal, reaches
// Redis up to chaosMaxDelay late (a delay), or never (a cut or a blackhole), and then the key
// expires chaosTTL after that renewal.
const maxLater = chaosMaxDelay + chaosTTL

// faultTargets are the links the scheduler may fault: every holder's but stock's, and the
// bridge's.
func (r *chaosRun) faultTargets() []*chaosHolder {
	var out []*chaosHolder
	for _, h := range r.holders {
		if h.proxy != nil {
			out = append(out, h)
		}
	}
	if r.bridge != nil {
		out = append(out, r.bridge.link)
	}
	return out
}
