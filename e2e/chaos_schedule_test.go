//go:build linux

package e2e

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktui/locktui/e2e/chaos"
	"github.com/locktui/locktui/internal/testsupport/faultproxy"
	"github.com/locktui/locktui/provider"
)

// The schedule.
const (
	// chaosStep is how often the scheduler looks at its clock: restores are this punctual.
	chaosStep = 20 * time.Millisecond
	// An action (a kill or a fault spell) every chaosActionMin to chaosActionMax, of which
	// chaosKillPercent are kills.
	chaosActionMin, chaosActionMax = 150 * time.Millisecond, 600 * time.Millisecond
	chaosKillPercent               = 20
	// A stock holder is killed at most once per chaosStockKillEvery (loading the Medusa
	// packages costs a Node process seconds of CPU).
	chaosStockKillEvery = 10 * time.Second
	// A fault lasts chaosSpellMin to chaosSpellMax (log-uniform); a delay is at most
	// chaosMaxDelay, just under go-redis's 3 s read timeout and beyond a lease's local deadline
	// (TTL − TTL/10 after its send time): a grant whose reply comes back that late must be given
	// back, never handed to a holder (TestLeaseIsNeverGrantedAfterItsDeadline).
	chaosSpellMin, chaosSpellMax = 100 * time.Millisecond, 4 * time.Second
	chaosMaxDelay                = 2900 * time.Millisecond
	// Redis restarts first after chaosFirstRestart (or half the run, if shorter), then every
	// chaosRestartEvery.
	chaosFirstRestart, chaosRestartEvery = 20 * time.Second, 40 * time.Second
	// chaosRedisDown is how long a restarted Redis stays down: longer than the longest TTL in
	// use. The server runs without persistence and comes back empty, so the moment it answers,
	// any key can be taken by anyone. A holder whose lease was last confirmed before the crash
	// has its local deadline (that send time + TTL − TTL/10) before the crash + TTL, and no
	// renewal can be confirmed while the server is down: with the server down for longer than
	// the TTL, every holder has stopped believing (told lost) before the empty server can give
	// its key to someone else. Restarting at once would rely on the provider noticing the new
	// run_id (it probes every 500 ms) before another process takes the key, which it cannot
	// promise. The poller's SET PX is no longer than the TTL either; stock Medusa, which has no
	// local deadline, is killed before the restart.
	chaosRedisDown = chaosTTL + 500*time.Millisecond
	// chaosFreeSlack is what a killed Go holder's key may take beyond its TTL (and any delay
	// on its link) to be free in Redis: the renewal it may have sent just before, and polling.
	chaosFreeSlack = 300 * time.Millisecond
	// chaosAimPercent of the fault spells go, when there is one, to a holder in a long work
	// (see chaosLongWork).
	chaosAimPercent = 80
	// chaosAimFor bounds the wait for a Go or run holder to be inside before its kill.
	chaosAimFor = 500 * time.Millisecond
)

// fault is one kind of fault on a holder's link to Redis; on applies it (d is a delay drawn for
// the delay faults), restoreLink ends it.
type fault struct {
	name string
	on   func(p *faultproxy.Proxy, d time.Duration)
}

var chaosFaults = []fault{
	{"blackhole up", func(p *faultproxy.Proxy, _ time.Duration) { p.Blackhole(faultproxy.Upstream) }},
	{"blackhole down", func(p *faultproxy.Proxy, _ time.Duration) { p.Blackhole(faultproxy.Downstream) }},
	{"blackhole both", func(p *faultproxy.Proxy, _ time.Duration) {
		p.Blackhole(faultproxy.Upstream)
		p.Blackhole(faultproxy.Downstream)
	}},
	{"delay up", func(p *faultproxy.Proxy, d time.Duration) { p.Delay(faultproxy.Upstream, d) }},
	{"delay down", func(p *faultproxy.Proxy, d time.Duration) { p.Delay(faultproxy.Downstream, d) }},
	{"delay both", func(p *faultproxy.Proxy, d time.Duration) {
		p.Delay(faultproxy.Upstream, d)
		p.Delay(faultproxy.Downstream, d)
	}},
	// One-sided cuts: one peer sees its connection end, the other keeps a silent socket.
	{"cut up", func(p *faultproxy.Proxy, _ time.Duration) { p.Cut(faultproxy.Upstream) }},
	{"cut down", func(p *faultproxy.Proxy, _ time.Duration) { p.Cut(faultproxy.Downstream) }},
	{"cut both", func(p *faultproxy.Proxy, _ time.Duration) { p.CutAll() }},
	// The link is down: open connections end, new ones are refused.
	{"link down", func(p *faultproxy.Proxy, _ time.Duration) {
		p.Refuse(true)
		p.CutAll()
	}},
}

// startChaosProxy starts a holder's link to Redis.
func startChaosProxy(t *testing.T, redisAddr string) *faultproxy.Proxy {
	t.Helper()
	return faultproxy.StartT(t, redisAddr)
}

// schedule injects faults for duration: kills and respawns, fault spells, Redis restarts.
func (r *chaosRun) schedule(duration time.Duration) {
	start := time.Now()
	end := start.Add(duration)
	nextRestart := start.Add(min(chaosFirstRestart, duration/2))
	nextBridgeRestart := start.Add(min(chaosFirstBridgeRestart, duration/3))
	killBridge := r.rng.IntN(2) == 0 // SIGKILL or SIGTERM, then the other one, and so on
	nextAction := start
	lastStockKill := time.Time{}
	restores := map[*chaosHolder]time.Time{}
	for now := time.Now(); now.Before(end); now = time.Now() {
		for h, at := range restores {
			if !now.Before(at) {
				r.restoreLink(h)
				delete(restores, h)
			}
		}
		switch {
		case !now.Before(nextRestart):
			r.restartRedis()
			nextRestart = time.Now().Add(chaosRestartEvery)
		case !now.Before(nextBridgeRestart):
			r.restartBridge(killBridge)
			killBridge = !killBridge
			nextBridgeRestart = time.Now().Add(chaosBridgeRestartEvery)
		case !now.Before(nextAction):
			nextAction = now.Add(r.between(chaosActionMin, chaosActionMax))
			h := r.holders[r.rng.IntN(len(r.holders))]
			stockTooSoon := h.kind == kindStock && now.Sub(lastStockKill) < chaosStockKillEvery
			if r.rng.IntN(100) < chaosKillPercent && !stockTooSoon {
				if h.kind == kindStock {
					lastStockKill = now
				}
				r.killAndRespawn(h)
				continue
			}
			if target := r.longWorker(); target != nil && r.rng.IntN(100) < chaosAimPercent {
				// Silence the link of a holder in a long work for long enough that its lease
				// is lost while it works.
				f := chaosFaults[r.rng.IntN(len(chaosFaults))]
				for f.name == "cut both" { // the client notices at once, reconnects and renews
					f = chaosFaults[r.rng.IntN(len(chaosFaults))]
				}
				r.aimedFaults++
				restores[target] = now.Add(r.applyFault(target, f, r.between(chaosTTL, 2*chaosTTL), r.between(chaosTTL/2, chaosMaxDelay)))
				continue
			}
			targets := r.faultTargets()
			if h = targets[r.rng.IntN(len(targets))]; h.fault != "" {
				continue
			}
			f := chaosFaults[r.rng.IntN(len(chaosFaults))]
			restores[h] = now.Add(r.applyFault(h, f, r.logUniform(chaosSpellMin, chaosSpellMax), r.between(time.Millisecond, chaosMaxDelay)))
		}
		time.Sleep(chaosStep)
	}
}

// applyFault puts fault f on the holder's link (delay is the delay of a delay fault) and
// returns spell, how long it is to last.
func (r *chaosRun) applyFault(h *chaosHolder, f fault, spell, delay time.Duration) time.Duration {
	if r.bridge != nil && h == r.bridge.link {
		r.mu.Lock()
		r.bridgeFaulted = time.Now()
		r.mu.Unlock()
	}
	f.on(h.proxy, delay)
	h.fault = f.name
	if strings.HasPrefix(f.name, "delay") {
		h.fault += " " + delay.Round(time.Millisecond).String()
		if f.name != "delay down" {
			h.upDelay = int64(delay)
		}
	}
	r.faults[f.name]++
	r.note(h.slotName(), "%s for %s", h.fault, spell.Round(time.Millisecond))
	return spell
}

// longWorker returns a Go, run or node holder without a fault on its link that has believed it holds
// a key for longer than any short work takes, or nil.
func (r *chaosRun) longWorker() *chaosHolder {
	now := chaos.MonoNow()
	for _, h := range r.holders {
		if !h.leased() || h.fault != "" {
			continue
		}
		if b, inside := openBelief(h.log); inside && time.Duration(now-b.T) > 5*chaosWork {
			return h
		}
	}
	return nil
}

// slotName is the holder's kind and slot, the same in every generation: its link's name.
func (h *chaosHolder) slotName() string { return fmt.Sprintf("%s-%d", h.kind, h.slot) }

// restoreLink ends the fault on the holder's link, if any.
func (r *chaosRun) restoreLink(h *chaosHolder) {
	if h.proxy == nil || h.fault == "" {
		return
	}
	h.proxy.Refuse(false)
	h.proxy.Restore(faultproxy.Upstream)
	h.proxy.Restore(faultproxy.Downstream)
	r.note(h.slotName(), "%s ends", h.fault)
	h.fault, h.upDelay = "", 0
}

// killAndRespawn SIGKILLs the holder, checks that a key it held is freed in time (Go and node
// holders) and starts its next generation. A Go, run or node holder is killed, if it can be,
// while it believes it holds a key (it spends most of its time waiting for one): the scheduler
// waits up to chaosAimFor for its log to show an open belief.
func (r *chaosRun) killAndRespawn(h *chaosHolder) {
	old := h.id
	if h.leased() {
		for aim := time.Now().Add(chaosAimFor); time.Now().Before(aim); time.Sleep(time.Millisecond) {
			if _, inside := openBelief(h.log); inside {
				r.aimed++
				break
			}
		}
	}
	r.kill(h)
	r.killed[h.kind]++
	r.note(h.slotName(), "SIGKILL %s", old)
	switch h.kind {
	case kindGo:
		r.checkFreed(h, time.Now())
	case kindNode:
		r.checkNodeFreed(h, time.Now())
	}
	r.start(h)
}

// checkFreed checks that the key a killed Go holder believed it held (its log's last enter,
// which names the lease's owner) is no longer that owner's in Redis within one TTL of the kill,
// plus the upstream delay of its link (a renewal sent just before the kill reaches Redis that
// much later) and chaosFreeSlack.
func (r *chaosRun) checkFreed(h *chaosHolder, killed time.Time) {
	if b, ok := openBelief(h.log); ok {
		r.watchFree(h.id, b.Key, b.Owner, killed, chaosTTL+time.Duration(h.upDelay)+chaosFreeSlack, nil)
	}
}

// watchFree waits, in the background, until key is no longer owner's in Redis, and records a
// failure when that takes longer than limit from killed, plus what later returns, if later is
// not nil: an allowance for faults that began after the kill (at most maxLater).
func (r *chaosRun) watchFree(id, key, owner string, killed time.Time, limit time.Duration, later func() time.Duration) {
	kind := chaos.HolderKind(id)
	r.checks.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), limit+maxLater+time.Second)
		defer cancel()
		rk := provider.DefaultNamespace + key
		for {
			v, err := r.rdb.Get(ctx, rk).Result()
			took := time.Since(killed)
			if errors.Is(err, redis.Nil) || (err == nil && v != owner) {
				r.mu.Lock()
				r.freed[kind]++
				r.maxFreed[kind] = max(r.maxFreed[kind], took)
				r.mu.Unlock()
				return
			}
			allowed := limit
			if later != nil {
				allowed += later()
			}
			if took > allowed {
				r.mu.Lock()
				r.slow = append(r.slow, fmt.Sprintf("chaos: key %q of %s (owner %s) still held %s after its SIGKILL (limit %s; last read: %v)",
					key, id, owner, took.Round(time.Millisecond), allowed, cmpErr(err, v)))
				r.mu.Unlock()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// cmpErr describes the result of a GET.
func cmpErr(err error, v string) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%q", v)
}

// restartRedis kills every stock holder (whose own behaviour on a restarted Redis is stock's
// and not under test), restarts Redis after chaosRedisDown and starts fresh stock holders.
func (r *chaosRun) restartRedis() {
	r.checks.Wait() // they read the keys a restart wipes
	var stock []*chaosHolder
	for _, h := range r.holders {
		if h.kind == kindStock {
			old := h.id
			r.kill(h)
			r.restartKills++
			r.note(h.slotName(), "SIGKILL %s before the Redis restart", old)
			stock = append(stock, h)
		}
	}
	r.note("", "Redis: SIGKILL, down for %s", chaosRedisDown)
	r.srv.Restart(r.t, chaosRedisDown)
	r.note("", "Redis: up again, empty")
	r.restarts++
	for _, h := range stock {
		r.start(h)
	}
}

// between returns a random duration in [lo, hi).
func (r *chaosRun) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(r.rng.Int64N(int64(hi-lo)))
}

// logUniform returns a random duration in [lo, hi) whose logarithm is uniform: as many short
// spells as long ones.
func (r *chaosRun) logUniform(lo, hi time.Duration) time.Duration {
	ratio := float64(hi) / float64(lo)
	return time.Duration(float64(lo) * math.Pow(ratio, r.rng.Float64()))
}
