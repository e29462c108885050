// Package e2e holds the end-to-end suite of locktui: Go tests that start real processes on one
// private redis-server and check that they share locks correctly.
//
// The processes are the bridge (cmd/bridge, built once per test run), Node processes using the
// bridge client (compat/medusa-locking-bridge), Node processes using the stock
// @medusajs/locking-redis 2.21.2 provider built the way Medusa builds it, and `locktui run`
// invocations (cmd/locktui). The Node side is one script, node/worker.js, driven over JSON lines
// on stdin and stdout; it loads its packages from compat/node_modules.
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
//
// The suite needs redis-server, Go and Node 20+ with `make node-deps` done. It fails (never skips)
// with an install hint when one of them is missing. Every process runs in its own process group
// and is stopped when its test ends; every server listens on loopback only. The suite runs on
// Unix systems.
package e2e
