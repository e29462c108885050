package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/bridge"
	"github.com/locktui/locktui/internal/freeport"
	"github.com/locktui/locktui/internal/testsupport"
	"github.com/locktui/locktui/internal/testsupport/redistest"
)

// bin is the bridge binary built once for the package.
var bin string

func TestMain(m *testing.M) {
	testsupport.Main(m, testsupport.MainOptions{Build: ".", Binary: &bin})
}

const (
	token = "cmd-test-token-0123456789"
	wait  = 10 * time.Second
	tick  = 10 * time.Millisecond
)

// command runs the binary with a clean environment (no BRIDGE_TOKEN or REDIS_URL from outside).
func command(args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	return cmd
}

func TestBadCommandLinesFailWithOneLine(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		status int
		want   string
	}{
		{[]string{"--bogus"}, 2, "unknown flag: --bogus"},
		{[]string{"-bogus"}, 2, "unknown shorthand flag"},
		// The single-dash spelling of Go's flag package still parses: -token is taken.
		{[]string{"-token", token, "-listen", "7420"}, 2, `bad listen address "7420"`},
		{[]string{"--token", token, "--events", "false"}, 2, `unexpected argument "false"`},
		{[]string{"--token", token, "extra"}, 2, `unexpected argument "extra"`},
		{nil, 2, "no token: give --token TOKEN or set BRIDGE_TOKEN"},
		{[]string{"--token", ";owner=svc"}, 2, "--token: bad token: empty token"},
		{[]string{"--token", "s3cret:svc-a:"}, 2, "--token: bad token: a token may not contain"},
		{[]string{"--insecure", "--listen", "0.0.0.0:7420"}, 2, "--insecure is only allowed on a loopback address"},
		{[]string{"--insecure", "--token", token + ";owner=svc-a:"}, 2, "--insecure cannot be combined with restricted tokens"},
		{[]string{"--insecure", "--token", token + ";keys=cart:"}, 2, "--insecure cannot be combined with restricted tokens"},
		{[]string{"--token", token, "--client-timeout", "100ms"}, 2, "--client-timeout must be at least 400ms"},
		{[]string{"--token", token, "--listen", "7420"}, 2, `bad listen address "7420"`},
		{[]string{"--token", token, "--log-format", "xml"}, 2, `--log-format must be text or json, not "xml"`},
		{[]string{"--token", token, "--log-level", "loud"}, 2, `--log-level must be debug, info, warn or error, not "loud"`},
		{[]string{"--token", token, "--max-keys", "0"}, 2, "--max-keys must be positive, not 0"},
		{[]string{"--token", token, "--tls-cert", "cert.pem"}, 2, "--tls-cert and --tls-key go together"},
		{[]string{"--token", token, "--redis", "http://localhost:6379"}, 1, "bad Redis URL"},
		{[]string{"--token", token, "--tls-cert", "missing.pem", "--tls-key", "missing.pem"}, 1, "load --tls-cert/--tls-key"},
	} {
		cmd := command(tc.args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Start())
		// A command line that is wrongly accepted starts a server: stop it rather than hang.
		kill := time.AfterFunc(wait, func() { _ = cmd.Process.Kill() })
		err := cmd.Wait()
		kill.Stop()
		var exit *exec.ExitError
		require.True(t, errors.As(err, &exit), "bridge %v: %v", tc.args, err)
		require.Equal(t, tc.status, exit.ExitCode(), "bridge %v: %s", tc.args, stderr.String())
		require.Empty(t, stdout.String())
		out := stderr.String()
		require.Equal(t, 1, strings.Count(out, "\n"), "bridge %v printed more than one line: %s", tc.args, out)
		require.True(t, strings.HasPrefix(out, "bridge: "), out)
		require.Contains(t, out, tc.want, "bridge %v", tc.args)
	}
}

func TestHelpGoesToStdout(t *testing.T) {
	out, err := command("-h").Output()
	require.NoError(t, err)
	require.Contains(t, string(out), "Usage: bridge --token TOKEN")
	require.Contains(t, string(out), "-allow-origin")
}

// The help is GNU style, names the endpoints, points at no file of this repository and never
// prints $REDIS_URL, which may hold a password.
func TestHelpNamesTheEndpointsInGNUStyle(t *testing.T) {
	cmd := command("--help")
	cmd.Env = append(cmd.Env, "REDIS_URL=redis://user:hunter2@redis.internal:6379")
	out, err := cmd.Output()
	require.NoError(t, err)
	help := string(out)
	for _, want := range []string{"/ws ", "/healthz ", "/readyz ", "/metrics ", "      --token TOKEN ",
		"      --listen HOST:PORT ", `(default "127.0.0.1:7420")`, "  -h, --help ", "(default $REDIS_URL, else redis://localhost:6379)"} {
		require.Contains(t, help, want)
	}
	require.NotRegexp(t, `(?m)^\s+-[a-z]{2,}`, help, "a long flag with one dash")
	require.NotContains(t, help, "docs/")
	require.NotContains(t, help, ".md")
	require.NotContains(t, help, "hunter2")
}

func TestSIGTERMDrainsTheClientsThenExitsCleanly(t *testing.T) {
	rs := redistest.Start(t)
	rdb := rs.Client(t)
	cmd := command("--listen", "127.0.0.1:0", "--redis", rs.URL, "--token", token, "--log-format", "json")
	var stderr testsupport.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	var exitErr error
	go func() {
		exitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // fails harmlessly once it has exited
		<-exited
	})

	var addr string
	require.Eventually(t, func() bool {
		addr = listenAddr(stderr.String())
		return addr != ""
	}, wait, tick, "no listening line in: %s", stderr.String())

	d := websocket.Dialer{HandshakeTimeout: wait, Subprotocols: []string{bridge.Subprotocol}}
	ws, resp, err := d.Dial("ws://"+addr+"/ws", http.Header{"Authorization": {"Bearer " + token}})
	require.NoError(t, err)
	_ = resp.Body.Close()
	defer ws.Close()
	require.NoError(t, ws.SetReadDeadline(time.Now().Add(wait)))
	_, _, err = ws.ReadMessage() // welcome
	require.NoError(t, err)
	require.NoError(t, ws.WriteJSON(map[string]any{"id": 1, "op": "lease", "keys": []string{"k"}}))
	var reply struct {
		OK     bool           `json:"ok"`
		Result map[string]any `json:"result"`
		Type   string         `json:"type"`
	}
	require.NoError(t, ws.ReadJSON(&reply))
	require.True(t, reply.OK)
	require.Equal(t, reply.Result["owner"], rdb.Get(context.Background(), "medusa_lock:k").Val())

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, ws.ReadJSON(&reply))
	require.Equal(t, "going_away", reply.Type, "the client is told first")
	require.Equal(t, int64(1), rdb.Exists(context.Background(), "medusa_lock:k").Val(), "nothing is freed before")
	require.NoError(t, ws.WriteJSON(map[string]any{"id": 2, "op": "lease_release", "lease": "L1"}))
	reply.Result = nil
	require.NoError(t, ws.ReadJSON(&reply))
	require.Equal(t, map[string]any{"released": true}, reply.Result, "the job releases its lease as usual")
	_, _, err = ws.ReadMessage()
	require.True(t, websocket.IsCloseError(err, websocket.CloseGoingAway), "want a 1001 close once idle, got %v", err)
	select {
	case <-exited:
		require.NoError(t, exitErr, "exit status; log: %s", stderr.String())
	case <-time.After(wait):
		t.Fatalf("the bridge did not exit after SIGTERM; log: %s", stderr.String())
	}
	require.Contains(t, stderr.String(), `"msg":"stopped"`)
}

// listenAddr finds the address in the JSON "listening" log line.
func listenAddr(log string) string {
	dec := json.NewDecoder(strings.NewReader(log))
	for {
		var line struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if dec.Decode(&line) != nil {
			return "" // the end, or a line still being written: the caller tries again
		}
		if line.Msg == "listening" {
			return line.Addr
		}
	}
}

func TestBadRedisURLNeverShowsThePassword(t *testing.T) {
	for _, url := range []string{
		"redis://user:hunter2@host:notaport",
		"redis://user:hunter2@host:6379/notadb",
		"redis://n1:7000?cluster=true&addr=u:hunter2@n2:7001",
	} {
		cmd := command("--insecure", "--redis", url)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		require.True(t, errors.As(err, &exit), "bridge --redis %s: %v", url, err)
		require.Equal(t, exitError, exit.ExitCode(), "bridge --redis %s: %s", url, stderr.String())
		out := stderr.String()
		require.Equal(t, 1, strings.Count(out, "\n"), "bridge --redis %s printed more than one line: %s", url, out)
		require.Contains(t, out, "bridge: redisconn: bad Redis URL")
		require.NotContains(t, out, "hunter2")
	}
}

// closedAddr returns a loopback address nobody listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	addr, err := freeport.Addr()
	require.NoError(t, err)
	return addr
}

// runUntilRedisWarning runs the bridge in-process with JSON logs on redisURL, whose Redis is
// not there, until it warns that Redis does not answer, stops it and returns its log records,
// checking that every line is one.
func runUntilRedisWarning(t *testing.T, redisURL string) (log string, records []map[string]any) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stdout, stderr testsupport.Buffer
	status := make(chan int, 1)
	go func() {
		status <- run(ctx, func() {}, []string{"--insecure", "--listen", "127.0.0.1:0", "--events=false",
			"--log-format", "json", "--redis", redisURL}, &stdout, &stderr, func(string) string { return "" })
	}()
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "Redis does not answer yet") },
		wait, tick, "no warning about Redis in: %s", stderr.String())
	cancel()
	select {
	case code := <-status:
		require.Equal(t, exitOK, code, "log: %s", stderr.String())
	case <-time.After(wait):
		t.Fatalf("the bridge did not stop; log: %s", stderr.String())
	}
	log = stderr.String()
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), "not a JSON record: %s", line)
		records = append(records, rec)
	}
	return log, records
}

// TestLogLinesOfGoRedisAreJSONToo: go-redis's own line about a failed dial comes out as a JSON
// record like every other line, and the password of the URL nowhere.
func TestLogLinesOfGoRedisAreJSONToo(t *testing.T) {
	addr := closedAddr(t)
	log, records := runUntilRedisWarning(t, "redis://user:hunter2@"+addr+"?max_retries=-1")
	require.NotContains(t, log, "hunter2")
	var goRedis int
	for _, rec := range records {
		if msg, _ := rec["msg"].(string); strings.HasPrefix(msg, "redis: connection pool: failed to dial") {
			require.Equal(t, "WARN", rec["level"], rec)
			goRedis++
		}
		if rec["msg"] == "listening" {
			require.Equal(t, "redis://user:xxxxx@"+addr+"?max_retries=-1", rec["redis"], rec)
		}
	}
	require.NotZero(t, goRedis, "no go-redis record in: %s", log)
}

// TestListeningLineNeverShowsAPassword: a Sentinel URL carries the master's password in its
// query; the "listening" line shows the server without it.
func TestListeningLineNeverShowsAPassword(t *testing.T) {
	addr := closedAddr(t)
	log, records := runUntilRedisWarning(t, "redis://"+addr+"/0?master_name=mymaster&password=hunter2&max_retries=-1")
	require.NotContains(t, log, "hunter2")
	var listening int
	for _, rec := range records {
		if rec["msg"] == "listening" {
			require.Equal(t, "redis://"+addr+"/0?master_name=mymaster&password=xxxxx&max_retries=-1", rec["redis"], rec)
			listening++
		}
	}
	require.Equal(t, 1, listening, log)
}

// A Redis whose maxmemory-policy can evict held locks is said at start, in one line.
func TestStartWarnsOfAnEvictingPolicy(t *testing.T) {
	srv := redistest.StartWith(t, redistest.Config{Args: []string{"--maxmemory-policy", "allkeys-lru"}})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stdout, stderr testsupport.Buffer
	status := make(chan int, 1)
	go func() {
		status <- run(ctx, func() {}, []string{"--insecure", "--listen", "127.0.0.1:0", "--events=false", "--redis", srv.URL},
			&stdout, &stderr, func(string) string { return "" })
	}()
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "maxmemory-policy is allkeys-lru") },
		wait, tick, "no warning about the policy in: %s", stderr.String())
	cancel()
	require.Equal(t, exitOK, <-status, "log: %s", stderr.String())
}
