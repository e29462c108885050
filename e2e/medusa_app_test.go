//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/locktui/locktui/internal/freeport"
	"github.com/locktui/locktui/internal/nodeproc"
	"github.com/locktui/locktui/internal/tailbuf"
	"github.com/locktui/locktui/internal/testsupport/pgtest"
	"github.com/locktui/locktui/internal/testsupport/redistest"
)

// The Medusa backend of the suite: the app in compat/medusa-app (medusa-config.js and a seed
// script), run with the medusa CLI of compat/node_modules on a private PostgreSQL
// (internal/testsupport/pgtest) and redis-server. These helpers start it the way a Medusa team does
// (`medusa db:migrate`, `medusa exec` of the seed, `medusa start`) and drive its store API the
// way a storefront does, for every test that needs a real Medusa.

// medusaAppPath is the Medusa app under the module root.
const medusaAppPath = "compat/medusa-app"

const (
	// medusaStepTimeout bounds one medusa command that runs to completion (db:migrate, exec).
	medusaStepTimeout = 5 * time.Minute
	// medusaRequestTimeout bounds one store API request.
	medusaRequestTimeout = 60 * time.Second
	// medusaLogMax bounds the server output a medusaServer keeps.
	medusaLogMax = 4 << 20
	// medusaDB is the database startMedusaStack migrates and seeds.
	medusaDB = "medusa"
)

// medusaApp is the app directory and the programs that run it.
type medusaApp struct {
	node string // the node binary
	cli  string // @medusajs/cli's cli.js, the `medusa` command
	// dir is where medusa commands run: compat/medusa-app. A test of the app built with
	// `medusa build` runs its servers in .medusa/server instead: a copy of the stack whose
	// app.dir is that directory (and whose medusaLocking.resolve names the installed package).
	dir string
	// npm, when set, is the npm program that starts servers with the app's start script,
	// `npm run start -- <flags>` in dir, as a built app is started in .medusa/server (its
	// node_modules/.bin/medusa); other medusa commands still run cli.
	npm string
}

// findMedusaApp checks that node and the app's packages are installed and returns the app. It
// fails the test (never skips) with a hint when they are not.
func findMedusaApp(t *testing.T) medusaApp {
	t.Helper()
	node, compat := nodeEnv(t)
	app := medusaApp{
		node: node,
		cli:  filepath.Join(compat, "node_modules", "@medusajs", "cli", "cli.js"),
		dir:  filepath.Join(filepath.Dir(compat), filepath.FromSlash(medusaAppPath)),
	}
	if err := nodeproc.CheckDeps(compat, "@medusajs/medusa", "@medusajs/cli"); err != nil { // the Medusa app's
		t.Fatalf("e2e: %v", err)
	}
	return app
}

// medusaSeed is what the app's seed script created (src/scripts/seed.js writes it).
type medusaSeed struct {
	PublishableKey   string `json:"publishableKey"`
	SalesChannelID   string `json:"salesChannelId"`
	RegionID         string `json:"regionId"`
	CountryCode      string `json:"countryCode"`
	CurrencyCode     string `json:"currencyCode"`
	ShippingOptionID string `json:"shippingOptionId"`
	ProductID        string `json:"productId"`
	VariantID        string `json:"variantId"`
}

// medusaStack is a migrated and seeded database with the Redis that Medusa servers of a test
// share (event bus, workflow engine, cache, stock locks).
type medusaStack struct {
	app   medusaApp
	pg    *pgtest.Server
	redis *redistest.Server
	db    string
	seed  medusaSeed
}

// startMedusaStack starts PostgreSQL and redis-server, creates the database, migrates it
// (`medusa db:migrate`) and seeds it (`medusa exec ./src/scripts/seed.js`), logging how long
// each phase took. Migrations and seed run with stock locking-redis.
func startMedusaStack(t *testing.T, app medusaApp) *medusaStack {
	t.Helper()
	began := time.Now()
	s := &medusaStack{app: app, db: medusaDB}
	s.redis = redistest.Start(t)
	s.pg = pgtest.Start(t)
	s.pg.CreateDB(t, s.db, "")
	t.Logf("medusa: postgres and redis-server up in %s", time.Since(began).Round(time.Millisecond))

	at := time.Now()
	s.mustRun(t, "db:migrate", stockLocking(), nil)
	t.Logf("medusa: medusa db:migrate took %s", time.Since(at).Round(time.Millisecond))

	at = time.Now()
	out := filepath.Join(t.TempDir(), "seed.json")
	s.mustRun(t, "exec ./src/scripts/seed.js", stockLocking(), []string{"SEED_OUTPUT=" + out})
	readJSON(t, out, &s.seed)
	if s.seed.PublishableKey == "" || s.seed.VariantID == "" || s.seed.ShippingOptionID == "" {
		t.Fatalf("e2e: the seed wrote %+v", s.seed)
	}
	t.Logf("medusa: seed took %s", time.Since(at).Round(time.Millisecond))
	return s
}

// medusaLocking chooses the Locking module's provider of a Medusa process (medusa-config.js
// reads it from the environment).
type medusaLocking struct {
	bridge bool   // compat/medusa-locking-bridge; else stock @medusajs/medusa/locking-redis
	url    string // the bridge's URL (bridge only)
	token  string // the bridge's token (bridge only)
	lazy   bool   // the provider option lazyConnect (bridge only)
	// resolve is the provider's resolve (bridge only): "" is the package's directory in this
	// checkout; "@locktui/medusa-locking-bridge" an installed package.
	resolve string
}

// stockLocking is stock locking-redis on the stack's Redis.
func stockLocking() medusaLocking { return medusaLocking{} }

// bridgeLocking is the bridge package, connected to b with its token.
func bridgeLocking(b *bridgeProc) medusaLocking {
	return medusaLocking{bridge: true, url: b.URL, token: b.Token}
}

// env is the environment of a medusa command of the stack with locking l.
func (s *medusaStack) env(l medusaLocking) []string {
	kind := "redis"
	if l.bridge {
		kind = "bridge"
	}
	return append(os.Environ(),
		"NODE_ENV=production",
		"MEDUSA_DISABLE_TELEMETRY=true",
		"DATABASE_URL="+s.pg.URL(s.db),
		"REDIS_URL="+s.redis.URL,
		"MEDUSA_LOCKING="+kind,
		"LOCKING_BRIDGE_URL="+l.url,
		"LOCKING_BRIDGE_TOKEN="+l.token,
		"LOCKING_BRIDGE_LAZY="+strconv.FormatBool(l.lazy),
		"LOCKING_BRIDGE_RESOLVE="+l.resolve,
	)
}

// command is `medusa args…` in the app's directory with locking l (`npm run start -- flags…`
// for `medusa start flags…` when the app has npm).
func (s *medusaStack) command(l medusaLocking, extraEnv []string, args ...string) *exec.Cmd {
	cmd := exec.Command(s.app.node, append([]string{s.app.cli}, args...)...)
	if s.app.npm != "" && len(args) > 0 && args[0] == "start" {
		cmd = exec.Command(s.app.npm, append([]string{"run", "start", "--"}, args[1:]...)...)
	}
	cmd.Dir = s.app.dir
	cmd.Env = append(s.env(l), extraEnv...)
	return cmd
}

// mustRun runs `medusa <args>` (args split on spaces) to completion, failing the test with the
// end of its output when it fails.
func (s *medusaStack) mustRun(t *testing.T, args string, l medusaLocking, extraEnv []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), medusaStepTimeout)
	defer cancel()
	r := runCommand(ctx, s.command(l, extraEnv, strings.Fields(args)...))
	if ctx.Err() != nil {
		t.Fatalf("e2e: medusa %s did not finish within %s:\n%s", args, medusaStepTimeout, tailOf(r.stdout+r.stderr, 4000))
	}
	if r.code != 0 {
		t.Fatalf("e2e: medusa %s exited with %d:\n%s", args, r.code, tailOf(r.stdout+r.stderr, 8000))
	}
}

// medusaServer is a `medusa start` process on a loopback port.
type medusaServer struct {
	name string
	// URL is http://127.0.0.1:PORT.
	URL string
	// Addr is 127.0.0.1:PORT.
	Addr string

	stack   *medusaStack
	locking medusaLocking
	seed    medusaSeed
	p       *proc
	log     *tailbuf.Buffer // stdout and stderr, line by line
}

// medusaPortAttempts is how many ports awaitReady tries: another process may take the free port
// before Medusa, which loads for seconds before it listens.
const medusaPortAttempts = 3

// startServer starts a Medusa server with locking l and waits until /health answers 200.
func (s *medusaStack) startServer(t *testing.T, name string, l medusaLocking) *medusaServer {
	t.Helper()
	m := s.launchServer(t, name, l)
	m.awaitReady(t)
	return m
}

// launchServer starts `medusa start` on a free loopback port with locking l and returns at
// once; awaitReady waits for it. Servers launched one after the other start in parallel. The
// cleanup stops the server with SIGTERM (Medusa's graceful shutdown), then kills its group.
func (s *medusaStack) launchServer(t *testing.T, name string, l medusaLocking) *medusaServer {
	t.Helper()
	m := &medusaServer{name: name, stack: s, locking: l, seed: s.seed}
	m.launch(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s output (tail):\n%s", name, m.log.Last(8000))
		}
	})
	return m
}

// launch starts the server process on a free port.
func (m *medusaServer) launch(t *testing.T) {
	t.Helper()
	port, err := freeport.Loopback()
	if err != nil {
		t.Fatalf("e2e: %v", err)
	}
	m.log = tailbuf.New(medusaLogMax) // the log of this process only
	m.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	m.URL = "http://" + m.Addr
	keep := func(line string) { _, _ = m.log.Write([]byte(line + "\n")) }
	cmd := m.stack.command(m.locking, nil, "start", "--host", "127.0.0.1", "--port", strconv.Itoa(port))
	m.p = startProc(t, m.name, cmd, procOptions{
		onStdout: keep,
		onStderr: keep,
		stop: func(p *proc) {
			p.signal(syscall.SIGTERM)
			p.wait(stopGrace)
		},
	})
}

// awaitReady waits until the server's /health answers 200, starting it again on another port
// when the port was taken. It fails the test if the server exits first or does not answer
// within startTimeout.
func (m *medusaServer) awaitReady(t *testing.T) {
	t.Helper()
	began := time.Now()
	for attempt := 1; ; attempt++ {
		err := m.pollHealth(t.Context())
		if err == nil {
			break
		}
		if errors.Is(err, errPortTaken) && attempt < medusaPortAttempts {
			t.Logf("e2e: %s: %v; starting it on another port", m.name, err)
			m.p.kill()
			m.launch(t)
			continue
		}
		t.Fatalf("e2e: %s: %v", m.name, err)
	}
	t.Logf("medusa: %s ready in %s", m.name, time.Since(began).Round(time.Millisecond))
}

// errPortTaken is pollHealth's error when the server could not listen on its port. (Medusa
// then goes on running without listening: the CLI only logs uncaught exceptions.)
var errPortTaken = errors.New("the port was taken (EADDRINUSE)")

// pollHealth polls /health until it answers 200, the process exits, its port turns out to be
// taken, or startTimeout passes.
func (m *medusaServer) pollHealth(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	last := ""
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.URL+"/health", nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		if m.portTaken() {
			return fmt.Errorf("%w: %s", errPortTaken, m.Addr)
		}
		select {
		case <-m.p.done:
			if m.portTaken() {
				return fmt.Errorf("%w: %s", errPortTaken, m.Addr)
			}
			return fmt.Errorf("medusa start exited before %s/health answered 200: %v", m.URL, m.p.err)
		case <-ctx.Done():
			return fmt.Errorf("%s/health did not answer 200 within %s (last: %s)", m.URL, startTimeout, last)
		case <-tick.C:
		}
	}
}

// portTaken reports whether the server's log says its port was taken.
func (m *medusaServer) portTaken() bool { return strings.Contains(m.log.String(), "EADDRINUSE") }

// logRecords returns the server's log: each JSON record of Medusa's logger (NODE_ENV=production)
// decoded (HTTP access records have no message), every other line as a record with only Message
// set.
func (m *medusaServer) logRecords() []medusaLogRecord {
	return parseMedusaLog(m.log.String())
}

// medusaLogRecord is one record of Medusa's JSON logger.
type medusaLogRecord struct {
	Level   string `json:"level"`
	Message string `json:"message"`
}

// parseMedusaLog splits out into records (see logRecords).
func parseMedusaLog(out string) []medusaLogRecord {
	var records []medusaLogRecord
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\r\n")
		var rec medusaLogRecord
		if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &rec) == nil && rec.Level != "" {
			records = append(records, rec)
			continue
		}
		records = append(records, medusaLogRecord{Message: line})
	}
	return records
}

// tailOf returns the last n bytes of s.
func tailOf(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// bridgeLockRequests is how many lock requests (acquire and lease) the bridge granted, read from
// its /metrics.
func bridgeLockRequests(t *testing.T, b *bridgeProc) int {
	t.Helper()
	addr := strings.TrimSuffix(strings.TrimPrefix(b.URL, "ws://"), "/ws")
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("e2e: bridge metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("e2e: bridge metrics: %v", err)
	}
	total := 0
	for line := range strings.Lines(string(body)) {
		name, value, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		switch name {
		case `locktui_bridge_requests_total{op="acquire",result="ok"}`, `locktui_bridge_requests_total{op="lease",result="ok"}`:
			n, err := strconv.ParseFloat(value, 64)
			if err != nil {
				t.Fatalf("e2e: bridge metrics: %s: %v", line, err)
			}
			total += int(n)
		}
	}
	return total
}

// runParallel runs fn(0) … fn(n-1) on n goroutines and returns their errors joined.
func runParallel(n int, fn func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
