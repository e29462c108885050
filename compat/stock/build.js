"use strict"
// Builds the stock @medusajs/locking-redis 2.21.2 provider the way Medusa's module loader does:
// the package's own loader gets the provider options and registers `redisClient` (one ioredis
// connection) and `prefix` in a Medusa container that also holds the logger, then the service
// class is constructed with that container's cradle and the Locking module's options (where
// 2.21.2 reads its tuning: waitLockingTimeout, defaultRetryInterval, maximumRetryInterval,
// backoffFactor).
//
// The packages resolve from compat/node_modules (`make node-deps`), wherever the caller lives:
//
//   const { buildStockProvider } = require("<compat>/stock/build")
//   const { provider, redis, close } = await buildStockProvider({ redisUrl: "redis://127.0.0.1:6390" })
//
// Used by stock/driver.js (the Go compatibility tests), bench/stock-bench.js (make bench),
// the e2e worker and the bridge client's interop tests.

/** What to run when the stock packages are missing. */
const DEPS_HINT = "run `make node-deps` (npm ci in compat/)"

/** A logger that drops everything, for callers that pass none. */
const silentLogger = { info() {}, warn() {}, error() {}, debug() {} }

/** Requires name from compat/node_modules; a missing package gets an error with DEPS_HINT. */
function load(name) {
  try {
    return require(name)
  } catch (err) {
    if (err?.code === "MODULE_NOT_FOUND" && String(err.message).includes(`'${name}'`)) {
      throw new Error(`cannot load ${name}: ${DEPS_HINT}`, { cause: err })
    }
    throw err
  }
}

/**
 * Builds the stock provider.
 *
 * @param {object} opts
 * @param {string} opts.redisUrl provider option "redisUrl" (required)
 * @param {string} [opts.namespace] provider option "namespace"; undefined leaves it out, so the
 *   stock default "medusa_lock:" applies
 * @param {object} [opts.redisOptions] provider option "redisOptions", handed to ioredis
 * @param {object} [opts.moduleOptions] the Locking module's options (its tuning); the provider
 *   entry is added as `providers`
 * @param {{info, warn, error, debug}} [opts.logger] the container's logger; default silent
 * @returns {Promise<{provider, redis, close: () => Promise<void>}>} the service instance, the
 *   ioredis client its loader registered (`redisClient`), and close(), which quits that client
 *   gracefully (redis.disconnect() ends it at once). The loader only logs a failed connection:
 *   call redis.ping() to know that Redis answers.
 */
async function buildStockProvider({ redisUrl, namespace, redisOptions, moduleOptions, logger = silentLogger } = {}) {
  if (typeof redisUrl !== "string" || !redisUrl) {
    throw new TypeError(`buildStockProvider needs a "redisUrl" string, e.g. "redis://127.0.0.1:6379"`)
  }
  const stockModule = load("@medusajs/locking-redis")
  const utils = load("@medusajs/framework/utils")
  const { asValue } = load("@medusajs/framework/awilix")
  const mod = stockModule.default ?? stockModule
  const Service = mod.services[0]

  const providerOptions = { redisUrl }
  if (namespace !== undefined) providerOptions.namespace = namespace
  if (redisOptions !== undefined) providerOptions.redisOptions = redisOptions
  const fullModuleOptions = {
    ...(moduleOptions ?? {}),
    providers: [
      { resolve: "@medusajs/locking-redis", id: "locking-redis", is_default: true, options: providerOptions },
    ],
  }
  const container = utils.createMedusaContainer()
  container.register({ logger: asValue(logger) })
  for (const loader of mod.loaders ?? []) {
    await loader({ container, logger, options: providerOptions, moduleOptions: fullModuleOptions })
  }
  const provider = new Service(container.cradle, fullModuleOptions, {})
  const redis = container.resolve("redisClient")
  return {
    provider,
    redis,
    async close() {
      try {
        await redis.quit()
      } catch {
        redis.disconnect()
      }
    },
  }
}

module.exports = { buildStockProvider, DEPS_HINT }
