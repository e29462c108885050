//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
)

// startTimeout bounds the start-up of a bridge or a Node worker on a loaded machine.
const startTimeout = 90 * time.Second

// bridgeProc is a running cmd/bridge.
type bridgeProc struct {
	// URL is the WebSocket endpoint, ws://127.0.0.1:PORT/ws.
	URL string
	// Token is the bearer token the bridge accepts.
	Token string

	p *proc
}

// startBridge runs the bridge against redisURL on a free loopback port with a fresh token and
// waits until /readyz answers 200. The cleanup stops it with SIGTERM and reports an unclean
// shutdown as a test error.
func startBridge(t *testing.T, redisURL string) *bridgeProc {
	t.Helper()
	return startBridgeWithToken(t, redisURL, "e2e-"+uuid.NewString())
}

// startBridgeWithToken is startBridge with a token of the caller's (bridges that share their
// clients share a token).
func startBridgeWithToken(t *testing.T, redisURL, token string) *bridgeProc {
	t.Helper()
	b := &bridgeProc{Token: token}
	cmd := exec.Command(binaries(t).bridge,
		"--listen", "127.0.0.1:0", "--redis", redisURL, "--log-format", "json", "--shutdown-timeout", "5s")
	cmd.Env = append(os.Environ(), "BRIDGE_TOKEN="+b.Token) // the token stays off the command line
	addrs := make(chan string, 1)
	b.p = startProc(t, "bridge", cmd, procOptions{
		// The "listening" log line names the port the kernel chose.
		onStderr: func(line string) {
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
		},
		stop: func(p *proc) {
			p.signal(syscall.SIGTERM)
			if !p.wait(stopGrace) {
				t.Errorf("the bridge did not stop within %s of SIGTERM", stopGrace)
			} else if p.err != nil {
				t.Errorf("the bridge did not shut down cleanly after SIGTERM: %v", p.err)
			}
		},
	})
	select {
	case addr := <-addrs:
		b.URL = "ws://" + addr + "/ws"
		awaitHTTP200(t, "http://"+addr+"/readyz", b.p)
	case <-b.p.done:
		t.Fatalf("e2e: the bridge exited during start-up: %v", b.p.err)
	case <-time.After(startTimeout):
		t.Fatalf("e2e: the bridge did not log its listening address within %s", startTimeout)
	}
	return b
}

// awaitHTTP200 polls url until it answers 200, the process ends, or startTimeout passes.
func awaitHTTP200(t *testing.T, url string, p *proc) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	ctx, cancel := context.WithTimeout(t.Context(), startTimeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var last string
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			t.Fatalf("e2e: %v", err)
		}
		resp, err := client.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-p.done:
			t.Fatalf("e2e: %s exited before %s answered 200: %v", p.name, url, p.err)
		case <-ctx.Done():
			t.Fatalf("e2e: %s did not answer 200 within %s (last: %s)", url, startTimeout, last)
		case <-tick.C:
		}
	}
}
