"use strict"

// The Medusa loader of the provider. Medusa hands loaders the provider's own options (the
// provider constructor only gets the Locking module's options), so the loader builds the bridge
// client and registers it, with the options, in the provider's container, as
// @medusajs/locking-redis does with its Redis client.
//
// It fails fast, as locking-redis fails without its redisUrl: unless lazyConnect is set, it
// waits for the first attempts to connect and throws one line naming the option to fix when no
// bridge accepts the client, or when any bridge refuses the token (lib/startup.js).

const { BridgeConnection } = require("./connection")
const { validateOptions, CLIENT_REGISTRATION, OPTIONS_REGISTRATION } = require("./provider")
const { checkAtStartup } = require("./startup")

/**
 * Builds the client from the provider options and registers it. Throws (one line) for invalid
 * options and, without lazyConnect, when the start-up check fails; the client is closed first,
 * so that nothing keeps the process alive.
 *
 * @param {{container: any, logger?: any, options?: object}} args
 */
module.exports = async function lockingBridgeLoader({ container, logger, options }) {
  validateOptions(options)
  const lazy = options.lazyConnect === true
  // Without lazyConnect, the start-up check reports the first attempts itself.
  const client = new BridgeConnection({ ...options, logger, reportFirstFailure: lazy })
  if (lazy) {
    logger?.warn?.(
      `locking-bridge: started without checking the bridge at ${client.display} (lazyConnect); calls wait for a connection, and an unreachable bridge or a refused token shows in their errors and in this log`
    )
  } else {
    const { error, warnings } = await checkAtStartup(client)
    if (error) {
      await client.close()
      throw error
    }
    for (const line of warnings) logger?.warn?.(line)
    logger?.info?.(`Connection to the bridge in "locking-bridge" provider established (${client.current?.display ?? client.display})`)
  }
  const { asValue } = require("@medusajs/framework/awilix")
  container.register({
    [CLIENT_REGISTRATION]: asValue(client),
    [OPTIONS_REGISTRATION]: asValue(options),
  })
}
