"use strict"
// Benchmark runner for the stock provider, @medusajs/locking-redis 2.21.2, built the way Medusa
// builds it (compat/stock/build.js): the package's own loader gets the provider options and
// registers `redisClient` (one ioredis connection) and `prefix` in a Medusa container, then the
// service class is constructed with that cradle and the Locking module's options (default
// tuning: waitLockingTimeout 5 s, retry 20 ms doubling up to 1 s).
//
// Usage: node bench/stock-bench.js --serve | '<scenario JSON>' (see harness.js; normally
// started by `go run ./cmd/bench`).

const { buildStockProvider } = require("../stock/build")
const { main } = require("./harness")

// Load the stock packages now, before the ready line: buildStockProvider requires them on its
// first call, and loading @medusajs/framework takes about half a second of CPU, which would
// make this process late for a window that opens at a set time (multi-process scenarios).
require("@medusajs/locking-redis")
require("@medusajs/framework/utils")
require("@medusajs/framework/awilix")

const logger = {
  warn: (msg) => process.stderr.write(`warn: ${msg}\n`),
  error: (msg) => process.stderr.write(`error: ${msg}\n`),
  info: () => {},
  debug: () => {},
}

main({
  name: "stock",
  async open(spec) {
    const { provider, redis } = await buildStockProvider({ redisUrl: spec.redis_url, namespace: spec.namespace, logger })
    return {
      execute: (keys, job, args) => provider.execute(keys, job, args),
      close: () => redis.disconnect(),
    }
  },
})
