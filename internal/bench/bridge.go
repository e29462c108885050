package bench

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// BridgeName is the name of the bridge implementation in the report: the Node client package
// (compat/medusa-locking-bridge) talking to the Go bridge (cmd/bridge).
const BridgeName = "bridge"

// GoInstallHint tells a developer how to get the go command, which builds the bridge.
const GoInstallHint = "go not found on PATH, needed to build the bridge (go build ./cmd/bridge): install Go (https://go.dev/dl/) or leave the bridge out with --impl go,stock"

// Limits of the bridge server's life cycle.
const (
	// bridgeBuildTimeout bounds `go build ./cmd/bridge` (a cold build cache on a loaded machine
	// takes a while).
	bridgeBuildTimeout = 5 * time.Minute
	// bridgeStartTimeout bounds the start-up: from launching the binary to /readyz answering 200.
	bridgeStartTimeout = 30 * time.Second
	// bridgeShutdownTimeout is the bridge's --shutdown-timeout; bridgeStopGrace how long Stop
	// waits after SIGTERM before it kills the process.
	bridgeShutdownTimeout = 5 * time.Second
	bridgeStopGrace       = bridgeShutdownTimeout + 5*time.Second
	// bridgePollInterval is the /readyz polling interval during start-up.
	bridgePollInterval = 20 * time.Millisecond
)

// bridgeImpl is the bridge implementation: bench/bridge-bench.js, whose Setup builds and starts
// a bridge for the run, in the implementation's namespace.
func bridgeImpl() NodeImpl {
	return NodeImpl{
		ImplName: BridgeName,
		Script:   "bench/bridge-bench.js",
		Requires: []string{"ioredis", "ws"},
		Setup: func(ctx context.Context, env Env) (map[string]any, func() error, error) {
			if env.bridge != nil { // one bridge for every bridge process of the run; Run stops it
				b, err := env.bridge.get(ctx, env)
				if err != nil {
					return nil, nil, err
				}
				return b.extra(), nil, nil
			}
			b, err := StartBridge(ctx, env, Namespace(BridgeName))
			if err != nil {
				return nil, nil, err
			}
			return b.extra(), b.Stop, nil
		},
	}
}

// BridgeServer is a cmd/bridge process started for one benchmark run: built from the module
// that holds env.CompatDir into a temporary directory, listening on a free loopback port (the
// kernel picks it; the bridge logs it), accepting one random token, with lock events off.
type BridgeServer struct {
	// URL is the WebSocket endpoint, ws://127.0.0.1:PORT/ws.
	URL string
	// Token is the bearer token the bridge accepts. It reaches the bridge through BRIDGE_TOKEN
	// (command lines are visible to other users) and the Node runner through its stdin.
	Token string
	// Namespace is the bridge's lock key prefix (--namespace).
	Namespace string

	dir    string // holds the binary; removed by Stop
	cmd    *exec.Cmd
	stderr *lineWriter   // copies the bridge's log to Env.Log; remembers its last line
	done   chan struct{} // closed when the process has exited and its stderr is copied
	err    error         // cmd.Wait's result, set before done closes
}

// extra is what the bridge runner script needs in Spec.Extra.
func (b *BridgeServer) extra() map[string]any {
	return map[string]any{"url": b.URL, "token": b.Token, "namespace": b.Namespace}
}

// Pid is the bridge process's id (0 before it started).
func (b *BridgeServer) Pid() int {
	if b.cmd == nil || b.cmd.Process == nil {
		return 0
	}
	return b.cmd.Process.Pid
}

// sharedBridge is the one bridge server of a run, started by the first bridge runner that opens
// (in parallel with the other start-ups) and shared by every bridge runner process.
type sharedBridge struct {
	mu      sync.Mutex
	started bool
	b       *BridgeServer
	err     error
}

func (s *sharedBridge) get(ctx context.Context, env Env) (*BridgeServer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		s.started = true
		s.b, s.err = StartBridge(ctx, env, Namespace(BridgeName))
	}
	return s.b, s.err
}

// server returns the bridge if it started.
func (s *sharedBridge) server() *BridgeServer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b
}

func (s *sharedBridge) stop() error {
	if b := s.server(); b != nil {
		return b.Stop()
	}
	return nil
}

// StartBridge builds cmd/bridge with `go build`, starts it against env.RedisURL with the lock
// key prefix namespace and waits until its /readyz answers 200. The bridge runs with
// --events=false: publishing lock events on Redis pub/sub is the console's feature, not part
// of the locking being measured. Its log goes to env.Log. Stop ends it.
func StartBridge(ctx context.Context, env Env, namespace string) (*BridgeServer, error) {
	log := env.Log
	if log == nil {
		log = io.Discard
	}
	dir, err := os.MkdirTemp("", "locktui-bench-bridge-")
	if err != nil {
		return nil, fmt.Errorf("bench: temporary directory for the bridge: %w", err)
	}
	bin, err := buildBridge(ctx, env.CompatDir, dir, log)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	b := &BridgeServer{Token: rand.Text(), Namespace: namespace, dir: dir, done: make(chan struct{})}
	if err := b.launch(ctx, bin, env.RedisURL, env.FairQueue, log); err != nil {
		_ = b.Stop()
		return nil, err
	}
	return b, nil
}

// buildBridge runs `go build -o dir/bridge ./cmd/bridge` in the module root, the parent of
// compatDir, and returns the binary's path.
func buildBridge(ctx context.Context, compatDir, dir string, log io.Writer) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", errors.New(GoInstallHint)
	}
	root := filepath.Dir(compatDir)
	if !fileExists(filepath.Join(root, "go.mod")) || !fileExists(filepath.Join(root, "cmd", "bridge")) {
		return "", fmt.Errorf("bench: cannot build the bridge: %s is not the locktui module (no go.mod and cmd/bridge next to the compat directory %s)", root, compatDir)
	}
	ctx, cancel := context.WithTimeout(ctx, bridgeBuildTimeout)
	defer cancel()
	bin := filepath.Join(dir, "bridge")
	fmt.Fprintln(log, "bench: building the bridge (go build ./cmd/bridge)")
	start := time.Now()
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", bin, "./cmd/bridge")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", err, context.Cause(ctx))
		}
		return "", fmt.Errorf("bench: go build ./cmd/bridge: %w\n%s", err, out)
	}
	fmt.Fprintf(log, "bench: bridge built in %s\n", time.Since(start).Round(100*time.Millisecond))
	return bin, nil
}

// launch starts the binary and waits until it is ready (see awaitReady).
func (b *BridgeServer) launch(ctx context.Context, bin, redisURL string, fair bool, log io.Writer) error {
	b.cmd = exec.Command(bin,
		"--listen", "127.0.0.1:0",
		"--redis", redisURL,
		"--namespace", b.Namespace,
		"--events=false",
		"--log-format", "json",
		"--shutdown-timeout", bridgeShutdownTimeout.String(),
		"--fair-queue="+strconv.FormatBool(fair),
	)
	// The token stays off the command line; exec keeps the last BRIDGE_TOKEN, so an inherited
	// one is not accepted too.
	b.cmd.Env = append(os.Environ(), "BRIDGE_TOKEN="+b.Token)
	addrs := make(chan string, 1)
	b.stderr = &lineWriter{prefix: "  [" + BridgeName + " server] ", out: log, onLine: func(line string) {
		// The "listening" line names the port the kernel chose.
		var rec struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "listening" && rec.Addr != "" {
			select {
			case addrs <- rec.Addr:
			default:
			}
		}
	}}
	b.cmd.Stderr = b.stderr
	if err := b.cmd.Start(); err != nil {
		close(b.done)
		return fmt.Errorf("bench: start the bridge: %w", err)
	}
	go func() {
		b.err = b.cmd.Wait()
		close(b.done)
	}()
	return b.awaitReady(ctx, addrs)
}

// awaitReady waits for the bridge's listening address, then polls /readyz until it answers
// 200, the process exits, ctx ends or bridgeStartTimeout passes.
func (b *BridgeServer) awaitReady(ctx context.Context, addrs <-chan string) error {
	ctx, cancel := context.WithTimeout(ctx, bridgeStartTimeout)
	defer cancel()
	exited := func() error {
		return fmt.Errorf("bench: the bridge exited during start-up (%v): %s", b.err, b.stderr.Last())
	}
	var addr string
	select {
	case addr = <-addrs:
	case <-b.done:
		return exited()
	case <-ctx.Done():
		return fmt.Errorf("bench: the bridge did not log its listening address: %w", context.Cause(ctx))
	}
	b.URL = "ws://" + addr + "/ws"
	ready := "http://" + addr + "/readyz"
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	defer client.CloseIdleConnections()
	tick := time.NewTicker(bridgePollInterval)
	defer tick.Stop()
	last := "no answer yet"
	for {
		status, err := httpStatus(ctx, client, ready)
		switch {
		case err != nil:
			last = err.Error()
		case status == http.StatusOK:
			return nil
		default:
			last = http.StatusText(status)
		}
		select {
		case <-b.done:
			return exited()
		case <-ctx.Done():
			return fmt.Errorf("bench: the bridge's %s did not answer 200 (last: %s): %w", ready, last, context.Cause(ctx))
		case <-tick.C:
		}
	}
}

// httpStatus GETs url and returns the response's status code.
func httpStatus(ctx context.Context, client *http.Client, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// Stop ends the bridge gracefully (SIGTERM: it releases every lease and closes its clients),
// kills it if it is still running after bridgeStopGrace, and removes its binary. It returns an
// error when the bridge did not stop cleanly. It is safe to call more than once.
func (b *BridgeServer) Stop() error {
	defer func() { _ = os.RemoveAll(b.dir) }()
	if b.cmd == nil || b.cmd.Process == nil {
		return nil
	}
	select {
	case <-b.done:
		return b.exitErr()
	default:
	}
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(bridgeStopGrace)
	defer timer.Stop()
	select {
	case <-b.done:
		return b.exitErr()
	case <-timer.C:
		_ = b.cmd.Process.Kill()
		<-b.done
		return fmt.Errorf("bench: the bridge did not stop within %s of SIGTERM and was killed", bridgeStopGrace)
	}
}

func (b *BridgeServer) exitErr() error {
	if b.err != nil {
		return fmt.Errorf("bench: the bridge did not shut down cleanly: %w: %s", b.err, b.stderr.Last())
	}
	return nil
}
