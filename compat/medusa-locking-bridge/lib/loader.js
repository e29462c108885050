"use strict"

// The Medusa loader of the provider. Medusa hands loaders the provider's own options (the
// provider constructor only gets the Locking module's options), so the loader builds the bridge
// client and registers it, with the options, in the provider's container, as
// @medusajs/locking-redis does with its Redis client.

const { BridgeConnection } = require("./connection")
const { validateOptions, CLIENT_REGISTRATION, OPTIONS_REGISTRATION } = require("./provider")

/**
 * @param {{container: any, logger?: any, options?: object}} args
 */
module.exports = async function lockingBridgeLoader({ container, logger, options }) {
  validateOptions(options)
  const client = new BridgeConnection({ ...options, logger, reportFirstFailure: false })
  // Like locking-redis, a bridge that cannot be reached at boot is logged, not fatal: the
  // client keeps reconnecting and calls wait for it.
  const err = await client.firstAttempt
  if (err) {
    logger?.error?.(`An error occurred while connecting to the bridge in provider "locking-bridge": ${err.message}`)
  } else {
    logger?.info?.(`Connection to the bridge in "locking-bridge" provider established`)
  }
  const { asValue } = require("@medusajs/framework/awilix")
  container.register({
    [CLIENT_REGISTRATION]: asValue(client),
    [OPTIONS_REGISTRATION]: asValue(options),
  })
}
