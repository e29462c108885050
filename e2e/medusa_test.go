//go:build unix

package e2e

import (
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/freeport"
)

// TestMedusaBackend runs a real Medusa 2.21.2 backend (compat/medusa-app) as a Medusa team does:
// PostgreSQL and redis-server of its own, `medusa db:migrate` once, the seed, and `medusa start`
// servers (admin off, NODE_ENV=production, the Redis event bus, workflow engine and cache) whose
// Locking module is the bridge package or stock locking-redis. Storefront requests (the store
// API with a publishable key) complete carts through them:
//
//   - BridgeCarts: carts completed through a server on the bridge package, also by 5 concurrent
//     requests each: exactly one order per cart, and the bridge granted the locks.
//   - MixedFleet: a stock locking-redis server and a bridge server on the same database and
//     Redis complete the same cart concurrently: exactly one order.
//   - StartupChecks: `medusa start` with a token the bridge refuses, or with no bridge at the
//     URL, exits non-zero with a line naming the option ("token", "url"); with lazyConnect it
//     starts anyway.
//   - ShopperSafeErrors: with the bridge stopped while the server runs, adding a line item
//     answers Medusa's generic 500, which tells the shopper nothing of the bridge; the server
//     log has the cause.
func TestMedusaBackend(t *testing.T) {
	began := time.Now()
	app := findMedusaApp(t)
	prebuilt := make(chan struct{})
	go func() { // the bridge builds while Postgres starts and the database migrates
		defer close(prebuilt)
		buildOnce.Do(func() { built, buildErr = build() })
	}()
	t.Cleanup(func() { <-prebuilt })

	stack := startMedusaStack(t, app)
	bridge := startBridge(t, stack.redis.URL)
	at := time.Now()
	viaBridge := stack.launchServer(t, "medusa-bridge", bridgeLocking(bridge))
	viaStock := stack.launchServer(t, "medusa-stock", stockLocking())
	viaBridge.awaitReady(t)
	viaStock.awaitReady(t)
	t.Logf("medusa: two servers (bridge, stock) started side by side in %s", time.Since(at).Round(time.Millisecond))

	at = time.Now()
	t.Run("cases", func(t *testing.T) {
		t.Run("BridgeCarts", func(t *testing.T) {
			t.Parallel()
			testBridgeCarts(t, stack, viaBridge, bridge)
		})
		t.Run("MixedFleet", func(t *testing.T) {
			t.Parallel()
			testMixedFleet(t, stack, viaBridge, viaStock)
		})
		t.Run("StartupChecks", func(t *testing.T) {
			t.Parallel()
			testStartupChecks(t, stack, bridge)
		})
		t.Run("ShopperSafeErrors", func(t *testing.T) {
			t.Parallel()
			testShopperSafeErrors(t, stack)
		})
	})
	t.Logf("medusa: cases took %s; the whole test so far %s", time.Since(at).Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
}

// completionRacers is how many requests complete the same cart at once.
const completionRacers = 5

// testBridgeCarts completes carts through the bridge package: one by a single request, three
// by completionRacers concurrent requests each (all at once).
func testBridgeCarts(t *testing.T, s *medusaStack, m *medusaServer, b *bridgeProc) {
	ctx := t.Context()
	granted := bridgeLockRequests(t, b)
	c := m.store()

	cartID, orderID := c.completeCart(t)
	assert.Equal(t, 1, s.ordersOfCart(t, cartID), "orders of cart %s", cartID)
	orders := map[string]string{orderID: cartID}

	const carts = 3
	ids := make([]string, carts)
	require.NoError(t, runParallel(carts, func(i int) (err error) {
		ids[i], err = c.prepareCart(ctx)
		return err
	}))
	results := make([]completion, carts*completionRacers)
	_ = runParallel(len(results), func(i int) error {
		results[i] = c.complete(ctx, ids[i/completionRacers])
		return nil
	})
	for i, id := range ids {
		order := assertOneOrder(t, s, id, results[i*completionRacers:(i+1)*completionRacers])
		if other, ok := orders[order]; ok && order != "" {
			t.Errorf("carts %s and %s got the same order %s", other, id, order)
		}
		orders[order] = id
	}
	assert.GreaterOrEqual(t, bridgeLockRequests(t, b)-granted, 1+carts,
		"the bridge granted a lock for every completion (the Locking module goes through it)")
}

// testMixedFleet completes two carts, each by requests to both servers at once (three each):
// the stock provider and the bridge exclude each other on the cart's lock.
func testMixedFleet(t *testing.T, s *medusaStack, viaBridge, viaStock *medusaServer) {
	ctx := t.Context()
	servers := []*storeClient{viaBridge.store(), viaStock.store()}
	const carts, perServer = 2, 3
	ids := make([]string, carts)
	require.NoError(t, runParallel(carts, func(i int) (err error) {
		ids[i], err = servers[i%2].prepareCart(ctx) // one cart made on each server
		return err
	}))
	const perCart = perServer * 2
	results := make([]completion, carts*perCart)
	_ = runParallel(len(results), func(i int) error {
		results[i] = servers[i%2].complete(ctx, ids[i/perCart])
		return nil
	})
	for i, id := range ids {
		assertOneOrder(t, s, id, results[i*perCart:(i+1)*perCart])
		var byServer [2][]int
		for j, r := range results[i*perCart : (i+1)*perCart] {
			byServer[j%2] = append(byServer[j%2], r.status)
		}
		t.Logf("cart %s: the bridge server answered %v, the stock server %v", id, byServer[0], byServer[1])
	}
}

// assertOneOrder checks the answers to concurrent completions of one cart: each is the cart's
// one order (200) or Medusa's conflict (409), at least one is the order, and the database links
// exactly one order to the cart. It returns the order's id.
func assertOneOrder(t *testing.T, s *medusaStack, cartID string, results []completion) string {
	t.Helper()
	order, conflicts := "", 0
	for _, r := range results {
		switch {
		case r.err != nil:
			t.Errorf("cart %s: a completion failed: %v", cartID, r.err)
		case r.orderID != "":
			if order != "" && r.orderID != order {
				t.Errorf("cart %s: completions answered two orders, %s and %s", cartID, order, r.orderID)
			}
			order = r.orderID
		case r.status == http.StatusConflict:
			conflicts++
		default:
			t.Errorf("cart %s: a completion answered %d: %s", cartID, r.status, r.body)
		}
	}
	assert.NotEmpty(t, order, "cart %s: no completion answered the order", cartID)
	assert.Equal(t, 1, s.ordersOfCart(t, cartID), "cart %s: orders in the database", cartID)
	t.Logf("cart %s: %d concurrent completions, %d answered order %s, %d conflicts",
		cartID, len(results), len(results)-conflicts, order, conflicts)
	return order
}

// testStartupChecks starts Medusa on the bridge package with a token the bridge refuses and with
// a URL where no bridge listens: both exit non-zero, naming the option to fix. With lazyConnect
// the second starts.
func testStartupChecks(t *testing.T, s *medusaStack, b *bridgeProc) {
	closed, err := freeport.Addr()
	require.NoError(t, err)
	unreachable := "ws://" + closed + "/ws"
	t.Run("WrongToken", func(t *testing.T) {
		t.Parallel()
		l := bridgeLocking(b)
		l.token = "wrong-" + uuid.NewString()
		assertNamesOption(t, s.expectStartFailure(t, "medusa-wrong-token", l), "token")
	})
	t.Run("UnreachableBridge", func(t *testing.T) {
		t.Parallel()
		l := medusaLocking{bridge: true, url: unreachable, token: b.Token}
		assertNamesOption(t, s.expectStartFailure(t, "medusa-no-bridge", l), "url")
	})
	t.Run("LazyConnect", func(t *testing.T) {
		t.Parallel()
		s.startServer(t, "medusa-lazy", medusaLocking{bridge: true, url: unreachable, token: b.Token, lazy: true})
	})
}

// expectStartFailure runs `medusa start` with locking l, expecting it to exit non-zero before
// it serves, and returns its log.
func (s *medusaStack) expectStartFailure(t *testing.T, name string, l medusaLocking) []medusaLogRecord {
	t.Helper()
	m := s.launchServer(t, name, l)
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	deadline := time.After(startTimeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-m.p.done:
			code := 0
			if m.p.err != nil {
				code = -1
				if exit, ok := m.p.err.(interface{ ExitCode() int }); ok {
					code = exit.ExitCode()
				}
			}
			if code <= 0 {
				t.Errorf("%s: medusa start ended with %v, want a non-zero exit code", name, m.p.err)
			}
			return m.logRecords()
		case <-deadline:
			t.Fatalf("%s: medusa start neither served nor exited within %s", name, startTimeout)
		case <-tick.C:
			if resp, err := client.Get(m.URL + "/health"); err == nil {
				_ = resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					t.Fatalf("%s: medusa start serves on %s; it should have refused to start", name, m.URL)
				}
			}
		}
	}
}

// assertNamesOption checks that the Locking module's loader failed with an error whose first
// line names the provider option ("token", "url") in quotes: Medusa logs it as "Loaders for
// module Locking failed: <the error's message>".
func assertNamesOption(t *testing.T, records []medusaLogRecord, option string) {
	t.Helper()
	quoted := strconv.Quote(option)
	for _, rec := range records {
		for line := range strings.Lines(rec.Message) {
			if strings.Contains(line, "Loaders for module Locking failed") && strings.Contains(line, quoted) {
				t.Logf("medusa start: %s", strings.TrimSpace(line))
				return
			}
		}
	}
	var lines []string
	for _, rec := range records {
		if rec.Level != "info" {
			lines = append(lines, rec.Level+": "+rec.Message)
		}
	}
	t.Errorf("no line of medusa start's output says the Locking loader failed naming %s; its non-info output:\n%s",
		quoted, tailOf(strings.Join(lines, "\n"), 6000))
}

// testShopperSafeErrors stops the bridge of a running server and adds a line item: the shopper
// gets Medusa's generic 500, naming nothing of the bridge, and the server log has the cause.
func testShopperSafeErrors(t *testing.T, s *medusaStack) {
	ctx := t.Context()
	b := startBridge(t, s.redis.URL)
	m := s.startServer(t, "medusa-bridge-stopped", bridgeLocking(b))
	c := m.store()
	cartID, err := c.createCart(ctx)
	require.NoError(t, err)
	require.NoError(t, c.addLineItem(ctx, cartID), "a line item is added while the bridge runs")

	b.p.kill()
	r, err := c.post(ctx, "/store/carts/"+cartID+"/line-items", map[string]any{"variant_id": c.seed.VariantID, "quantity": 1})
	require.NoError(t, err)
	body := string(r.body)
	t.Logf("with the bridge stopped, POST /store/carts/:id/line-items answered %d %s", r.status, body)
	assert.Equal(t, http.StatusInternalServerError, r.status)
	var answer struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	if assert.NoError(t, json.Unmarshal(r.body, &answer), "the body: %s", body) {
		assert.Equal(t, "unknown_error", answer.Type)
		assert.Equal(t, "An unknown error occurred.", answer.Message)
	}
	addr := strings.TrimSuffix(strings.TrimPrefix(b.URL, "ws://"), "/ws")
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	for _, secret := range []string{b.URL, addr, port, b.Token, "token", "locking-bridge"} {
		assert.NotContains(t, body, secret, "the shopper's answer names the bridge")
	}

	// The operator's view: an error record naming the bridge's address.
	cause := func() string {
		for _, rec := range m.logRecords() {
			if rec.Level == "error" && strings.Contains(rec.Message, addr) {
				return rec.Message
			}
		}
		return ""
	}
	require.Eventually(t, func() bool { return cause() != "" }, 5*time.Second, 50*time.Millisecond,
		"the server log has an error naming the bridge at %s", addr)
	t.Logf("the server log has the cause: %s", firstLine(cause()))
}

// firstLine returns s up to its first newline.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
