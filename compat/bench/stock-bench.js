"use strict"
// Benchmark runner for the stock provider, @medusajs/locking-redis 2.21.2, built the way Medusa
// builds it (as compat/stock/driver.js does): the package's own loader gets the provider options
// and registers `redisClient` (one ioredis connection) and `prefix` in a Medusa container, then
// the service class is constructed with that cradle and the Locking module's options (default
// tuning: waitLockingTimeout 5 s, retry 20 ms doubling up to 1 s).
//
// Usage: node bench/stock-bench.js --serve | '<scenario JSON>' (see harness.js; normally
// started by `go run ./cmd/bench`).

const stockModule = require("@medusajs/locking-redis")
const utils = require("@medusajs/framework/utils")
const { asValue } = require("@medusajs/framework/awilix")
const { main } = require("./harness")

const logger = {
  warn: (msg) => process.stderr.write(`warn: ${msg}\n`),
  error: (msg) => process.stderr.write(`error: ${msg}\n`),
  info: () => {},
  debug: () => {},
}

main({
  name: "stock",
  async open(spec) {
    const mod = stockModule.default ?? stockModule
    const Service = mod.services[0]
    const providerOptions = { redisUrl: spec.redis_url, namespace: spec.namespace }
    const moduleOptions = {
      providers: [
        { resolve: "@medusajs/locking-redis", id: "locking-redis", is_default: true, options: providerOptions },
      ],
    }
    const container = utils.createMedusaContainer()
    container.register({ logger: asValue(logger) })
    for (const loader of mod.loaders ?? []) {
      await loader({ container, logger, options: providerOptions, moduleOptions })
    }
    const provider = new Service(container.cradle, moduleOptions, {})
    const client = container.resolve("redisClient")
    return {
      execute: (keys, job, args) => provider.execute(keys, job, args),
      close: () => client.disconnect(),
    }
  },
})
