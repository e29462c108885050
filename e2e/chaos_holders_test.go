//go:build linux

package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/locktui/locktui/e2e/chaos"
	"github.com/locktui/locktui/internal/testsupport/faultproxy"
)

// Kinds of chaos holder (the part of a holder id before the '-', see chaos.HolderKind).
const (
	kindGo     = "go"     // e2e/chaos/holder go: provider.AcquireLease, through a faultproxy
	kindRun    = "run"    // e2e/chaos/holder runloop: `locktui run`, through a faultproxy
	kindPoller = "poller" // e2e/chaos/holder poller: SET NX PX, through a faultproxy
	kindStock  = "stock"  // e2e/node/chaos-holder.js with stock Medusa, straight to Redis
	kindNode   = "node"   // e2e/node/chaos-holder.js with the bridge client, through a faultproxy to the bridge
)

var (
	holderOnce sync.Once
	holderBin  string
	holderErr  error
)

// chaosHolderBinary builds e2e/chaos/holder (without the race detector: it is the workload,
// not the code under test) next to the suite's other binaries, on first use.
func chaosHolderBinary(t *testing.T) string {
	t.Helper()
	dir := filepath.Dir(binaries(t).locktui)
	holderOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			holderErr = err
			return
		}
		holderBin = filepath.Join(dir, "chaos-holder")
		cmd := exec.Command("go", "build", "-o", holderBin, "./e2e/chaos/holder")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			holderErr = fmt.Errorf("go build ./e2e/chaos/holder: %v\n%s", err, out)
		}
	})
	if holderErr != nil {
		t.Fatalf("e2e: %v", holderErr)
	}
	return holderBin
}

// chaosHolder is one holder slot of a chaos run: a process, respawned under a new holder id
// (generation) after every kill, with its own link to Redis.
type chaosHolder struct {
	kind string
	slot int
	gen  int
	// id is the current process's holder id, kind-slot#gen; log is its log file.
	id, log string
	// proxy is the holder's link to Redis (nil for stock holders, which connect directly).
	proxy *faultproxy.Proxy
	// bridgeURLs, for a node holder, are the bridges it is given, in order, instead of the run's
	// bridge through proxy.
	bridgeURLs []string
	p          *proc
	// fault names the fault on proxy now ("" for none); upDelay is its upstream delay.
	fault   string
	upDelay int64 // ns
}

// slow reports whether the holder is a slow job: the first Go, run and node holder, which work
// long (chaosLongWork) on the slow key, so that faults on their links make them lose leases
// while they work. Slow jobs would block the shared keys for seconds.
func (h *chaosHolder) slow() bool { return h.slot == 1 && h.leased() }

// leased reports whether the holder holds renewed leases with a local deadline (Go, run and
// node holders), which the scheduler aims its kills and its long faults at.
func (h *chaosHolder) leased() bool {
	return h.kind == kindGo || h.kind == kindRun || h.kind == kindNode
}

// holderKeys returns the keys the holder takes: the slow key for a slow job, the shared keys for
// the others, and both to the poller and stock Medusa, which thus also take the slow key the
// moment a slow job's lease has expired.
func (r *chaosRun) holderKeys(h *chaosHolder) []string {
	switch {
	case h.slow():
		return []string{chaosSlowKey}
	case h.kind == kindPoller, h.kind == kindStock:
		return append(slices.Clip(r.keys), chaosSlowKey)
	default:
		return r.keys
	}
}

// longPercent is the share of the holder's acquisitions that work long.
func (h *chaosHolder) longPercent() int {
	if h.slow() {
		return chaosLongPercent
	}
	return 0
}

// start launches the holder's next generation.
func (r *chaosRun) start(h *chaosHolder) {
	t := r.t
	t.Helper()
	h.gen++
	h.id = fmt.Sprintf("%s-%d#%d", h.kind, h.slot, h.gen)
	h.log = filepath.Join(r.dir, strings.ReplaceAll(h.id, "#", "_")+".jsonl")
	keys := strings.Join(r.holderKeys(h), ",")
	seed := strconv.FormatUint(r.rng.Uint64()|1, 10)
	var cmd *exec.Cmd
	common := func(mode string) []string {
		return []string{mode, "--redis", "redis://" + h.proxy.Addr(), "--log", h.log, "--holder", h.id,
			"--keys", keys, "--seed", seed}
	}
	switch h.kind {
	case kindGo:
		cmd = exec.Command(r.holderBin, append(common("go"), "--expire", chaosTTL.String(),
			"--timeout", chaosWait.String(), "--work", chaosWork.String(), "--max-retry", chaosMaxRetry.String(),
			"--long", chaosLongWork.String(), "--long-percent", strconv.Itoa(h.longPercent()))...)
	case kindRun:
		cmd = exec.Command(r.holderBin, append(common("runloop"), "--locktui", r.locktuiBin,
			"--expire", chaosTTL.String(), "--grace", chaosGrace.String(), "--timeout", chaosWait.String(),
			"--work", chaosWork.String(),
			"--long", chaosLongWork.String(), "--long-percent", strconv.Itoa(h.longPercent()))...)
	case kindPoller:
		cmd = exec.Command(r.holderBin, append(common("poller"), "--px", chaosTTL.String(),
			"--every", chaosPollEvery.String(), "--work", chaosPollWork.String(),
			"--rest", chaosPollRest.String())...)
	case kindStock, kindNode:
		cfg := map[string]any{
			"compatDir": r.compat, "backend": backendStock, "redisUrl": r.srv.URL, "holder": h.id,
			"log": h.log, "keys": r.holderKeys(h), "expire": chaosTTL.Seconds(), "timeout": chaosWait.Seconds(),
			"workMs": chaosWork.Milliseconds(),
		}
		if h.kind == kindNode {
			r.nodeConfig(h, cfg)
		}
		cfgJSON, err := json.Marshal(cfg)
		if err != nil {
			t.Fatalf("e2e: %v", err)
		}
		cmd = exec.Command(r.node, filepath.Join(r.root, "e2e", "node", "chaos-holder.js"), string(cfgJSON))
	default:
		t.Fatalf("e2e: unknown holder kind %q", h.kind)
	}
	h.p = startProc(t, h.id, cmd, procOptions{})
}

// kill SIGKILLs the holder's process group, reaps it and logs killed for it.
func (r *chaosRun) kill(h *chaosHolder) {
	h.p.kill()
	if _, err := r.sched.Now(h.id, "", chaos.Killed); err != nil {
		r.t.Fatalf("e2e: %v", err)
	}
}

// stop ends the holder at the end of the run: SIGTERM for the Go and node holders, which finish
// their acquisition and exit; SIGKILL (and killed) for stock ones and for any that does not exit
// in time. It reports whether the holder stopped on its own.
func (r *chaosRun) stop(h *chaosHolder) bool {
	if h.p.exited() { // only the scheduler ends holders
		r.t.Errorf("chaos: %s exited on its own: %v; stderr: %s", h.id, h.p.err, h.p.stderr.Last(2000))
		return false
	}
	if h.kind != kindStock {
		_ = h.p.cmd.Process.Signal(syscall.SIGTERM)
		if h.p.wait(stopGrace) {
			_, inside := openBelief(h.log)
			switch {
			case h.p.err == nil:
			case diedOf(h.p.err, syscall.SIGTERM) && !inside:
				// Started just before the end of the run, it got the signal before its
				// handler existed (the process's first milliseconds): it held nothing.
				r.t.Logf("%s was stopped before it could handle SIGTERM", h.id)
			default:
				r.t.Errorf("chaos: %s did not stop cleanly on SIGTERM: %v", h.id, h.p.err)
			}
			return true
		}
		r.t.Logf("%s did not exit within %s of SIGTERM; killing it", h.id, stopGrace)
	}
	r.kill(h)
	return false
}

// diedOf reports whether a process's Wait error says that sig killed it.
func diedOf(err error, sig syscall.Signal) bool {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return false
	}
	ws, ok := exit.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

// belief is the open belief at the end of a holder's log: its enter.
type belief struct {
	T     int64  `json:"t"`
	Key   string `json:"key"`
	Ev    string `json:"ev"`
	Owner string `json:"owner"` // Go holders: the lease's owner
}

// openBelief returns the enter of the belief the holder's log leaves open (an enter without an
// exit or lost after it), if any. It reads only the end of the log.
func openBelief(path string) (belief, bool) {
	f, err := os.Open(path)
	if err != nil {
		return belief{}, false
	}
	defer f.Close()
	const tail = 2 << 10 // a few lines
	if st, err := f.Stat(); err == nil && st.Size() > tail {
		_, _ = f.Seek(st.Size()-tail, io.SeekStart)
	}
	data, _ := io.ReadAll(f)
	var last belief
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		var e belief
		if json.Unmarshal(line, &e) == nil && e.Ev != "" {
			last = e
		}
	}
	return last, last.Ev == string(chaos.Enter)
}

// logFiles returns every log of the run.
func (r *chaosRun) logFiles() []string {
	files, err := filepath.Glob(filepath.Join(r.dir, "*.jsonl"))
	if err != nil {
		r.t.Fatalf("e2e: %v", err)
	}
	return files
}
