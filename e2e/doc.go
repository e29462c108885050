// Package e2e holds the end-to-end suite of locktui: Go tests that start real processes on one
// private redis-server and check that they share locks correctly.
//
// The processes are the bridge (cmd/bridge, built once per test run), Node processes using the
// bridge client (compat/medusa-locking-bridge), Node processes using the stock
// @medusajs/locking-redis 2.21.2 provider built the way Medusa builds it, and `locktui run`
// invocations (cmd/locktui). The Node side is one script, node/worker.js, driven over JSON lines
// on stdin and stdout; it loads its packages from compat/node_modules. TestMedusaBackend also
// runs a whole Medusa 2.21.2 backend, the app in compat/medusa-app, on a private PostgreSQL
// (internal/testsupport/pgtest); medusa_app_test.go has its helpers (migrate and seed, start a server,
// complete a cart through the store API).
//
// What the suite proves:
//
//   - TestSharedCounterAcrossAllClients: all three kinds of client increment one counter under
//     one lock key at the same time; the counter is exact and no two critical sections overlap.
//   - TestKilledNodeClientFreesLeaseWithin5s: a bridge client killed with SIGKILL while its
//     execute job runs has its keys freed within the bridge's client timeout (well before the
//     lease's 60 s expiry).
//   - TestBridgeAndStockExcludeEachOther: a bridge client and a stock process exclude each other
//     with stock's error message, and `locktui list --json` / `release --force` see and free a
//     lock a stock process took.
//   - TestPackedTarballInstallsAsMedusaProvider: the Node package packed by `npm pack` holds
//     exactly its runtime files, installs into a scratch app with `npm install <tarball>`
//     (node/scratch-app.js), loads there with require() and import(), and serves a Medusa
//     Locking module bootstrapped with it as the default provider.
//   - TestChaos (Linux): Go provider processes, bridge clients, `locktui run` loops, stock
//     processes and a foreign SET NX poller take a few shared keys while a scheduler SIGKILLs
//     holders, restarts the bridge (SIGTERM, SIGKILL) and Redis (a delayed restart), and cuts,
//     blackholes and delays links through fault proxies; the chaos package's checker must find
//     no holder entering while another believed. A short run is part of `go test`; `make chaos
//     DURATION=10m` runs a long one (see docs/safety.md).
//   - TestSentinelFailover (Linux): on a Sentinel deployment (a master, a replica, three
//     sentinels), `locktui run` loops and bridge clients share one key through two failovers
//     (the master SIGKILLed while a holder is inside, its writes replicated first; the old
//     master restarted as a replica before the second): no two holders believe at once, the
//     holders of a killed master stop believing within a TTL, work goes on on each new master,
//     and a run started while the master is down succeeds once the new master answers.
//   - TestClientsOfTwoBridgesOutliveOne (Linux): bridge clients given two bridges (half of them
//     each first) and Go providers share keys while one bridge is SIGKILLed: the chaos checker
//     finds no holder entering while another believed; the clients of the dead bridge are told
//     at once and go on through the other (docs/deployment.md has the times).
//   - TestMedusaBackend: a Medusa 2.21.2 backend (`medusa db:migrate` once, a seed made with
//     Medusa's workflows, `medusa start` servers with admin off, NODE_ENV=production and the Redis
//     event bus, workflow engine and cache) completes storefront carts through the store API:
//     through the bridge package, also by 5 concurrent completions of one cart (exactly one order
//     per cart, the locks granted by the bridge); through a stock locking-redis server and a bridge
//     server on one database and Redis completing the same cart at once (exactly one order).
//     `medusa start` with a token the bridge refuses, or no bridge at its URL, exits non-zero
//     with a line naming the option ("token", "url"), and starts with lazyConnect; with the bridge
//     stopped under a running server, a store request answers Medusa's generic 500 that names
//     nothing of the bridge, while the server log has the cause.
//   - TestMedusaBuild: the README's install survives `medusa build` on a clean machine. The
//     package is served by a registry written in Go (npmregistry_test.go) from the `npm pack`
//     tarball; compat/medusa-app, copied out as an app with its own package.json and lock file,
//     runs `npm install @locktui/medusa-locking-bridge`, `npx medusa build` (admin off), then in
//     .medusa/server (moved out of the app) `npm ci` with an empty npm cache and `npm run start`
//     with the bridge as its Locking provider. The lock file records the registry's tarball URL,
//     npm ci fetches the package from it (no .npmrc there), and the built server completes a
//     cart: exactly one order. About 2.5 minutes on 2 cores, most of it the two installs of
//     Medusa's tree; each phase's time is logged.
//
// The suite needs redis-server, PostgreSQL (initdb and postgres, for TestMedusaBackend and
// TestMedusaBuild), Go and Node 20.19+ with `make node-deps` done; TestMedusaBuild also needs
// the npm registry npm is configured with (registry.npmjs.org): its `npm ci` starts from an empty
// cache. The suite fails (never skips) with an install hint when a program is missing, and
// TestMedusaBuild with npm's error when the registry cannot be reached. Every process runs in its
// own process group and is stopped when its test ends; every server listens on loopback only. The
// suite runs on Unix systems.
package e2e
