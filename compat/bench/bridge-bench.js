"use strict"
// Benchmark runner for the bridge client, @locktui/medusa-locking-bridge (compat/medusa-locking-bridge):
// createBridgeLockingProvider({url, token}) holds its locks through a Go bridge (cmd/bridge),
// which runs the Go provider against the benchmark's Redis. One WebSocket connection per
// scenario, default tuning; its execute is stock's (timeout 5 s, expire 60 s), and its timeout
// conflict has stock's message, so the harness's default isTimeout applies.
//
// The Go side (internal/bench, StartBridge) builds and starts the bridge for the run, with
// --namespace set to the bridge implementation's namespace and --events=false, and passes
// spec.extra = {url, token, namespace}.
//
// Usage: node bench/bridge-bench.js --serve | '<scenario JSON>' (see harness.js; normally
// started by `go run ./cmd/bench`).

const { main } = require("./harness")

/** How long open() waits for the WebSocket connection and the bridge's welcome. */
const READY_TIMEOUT_MS = 30000

let createBridgeLockingProvider
try {
  // The package is not installed in node_modules: it lives next to this directory.
  createBridgeLockingProvider = require("../medusa-locking-bridge").createBridgeLockingProvider
} catch (err) {
  process.stderr.write(`bridge runner: cannot load the bridge client package (compat/medusa-locking-bridge): ${err.message}\n`)
  process.exit(1)
}

const logger = {
  info: () => {},
  warn: (msg) => process.stderr.write(`warn: ${msg}\n`),
  error: (msg) => process.stderr.write(`error: ${msg}\n`),
}

main({
  name: "bridge",
  async open(spec) {
    const { url, token, namespace } = spec.extra ?? {}
    if (!url || !token) {
      throw new Error("bridge runner: spec.extra needs the bridge's url and token (the Go side starts the bridge and passes them)")
    }
    // The bridge's namespace is fixed when it starts; the locks must land where the report says.
    if (namespace !== spec.namespace) {
      throw new Error(`bridge runner: the bridge serves namespace ${JSON.stringify(namespace)}, the scenario wants ${JSON.stringify(spec.namespace)}`)
    }
    const provider = createBridgeLockingProvider({ url, token, logger })
    try {
      await provider.ready(READY_TIMEOUT_MS)
    } catch (err) {
      await provider.close()
      throw err
    }
    return {
      execute: (keys, job, args) => provider.execute(keys, job, args),
      close: () => provider.close(),
    }
  },
})
