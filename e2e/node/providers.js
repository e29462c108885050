"use strict"

// The two Node lock providers of the end-to-end tests, built once for every script here
// (worker.js, chaos-holder.js): the bridge client, or the stock @medusajs/locking-redis 2.21.2
// provider built as Medusa's module loader builds it (compat/stock/build.js).

/**
 * Builds the provider config.backend names and waits until it can serve; resolves
 * {provider, close}.
 *
 * @param {{backend: "bridge" | "stock", redisUrl?: string, bridgeUrl?: string | string[], token?: string}} config
 * @param {NodeRequire} compatRequire a require rooted in compat/ (where the packages are installed)
 * @param {object} logger the providers' logger
 */
async function buildProvider(config, compatRequire, logger) {
  if (config.backend === "stock") {
    const { buildStockProvider } = compatRequire("./stock/build")
    const { provider, redis } = await buildStockProvider({ redisUrl: config.redisUrl, logger })
    await redis.ping()
    return { provider, close: async () => redis.disconnect() }
  }
  const { createBridgeLockingProvider } = compatRequire("./medusa-locking-bridge")
  const provider = createBridgeLockingProvider({ url: config.bridgeUrl, token: config.token, logger })
  await provider.ready(30000)
  return { provider, close: () => provider.close() }
}

module.exports = { buildProvider }
