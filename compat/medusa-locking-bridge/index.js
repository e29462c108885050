"use strict"

// @locktui/medusa-locking-bridge: a Medusa locking module provider (identifier "locking-bridge")
// that holds its locks through a locktui bridge, and createBridgeLockingProvider() for any Node
// app. See README.md.

const { BridgeLockingProvider, createBridgeLockingProvider } = require("./lib/provider")
const loader = require("./lib/loader")
const { medusaUtils, LOCKING_BRIDGE_ERROR } = require("./lib/errors")

const services = [BridgeLockingProvider]
const loaders = [loader]
const utils = medusaUtils()

// What Medusa resolves: ModuleProvider(Modules.LOCKING, {services, loaders}), or the same plain
// object when @medusajs/framework is not installed.
const moduleProvider = utils?.ModuleProvider
  ? utils.ModuleProvider(utils.Modules.LOCKING, { services, loaders })
  : { module: "locking", services, loaders }

module.exports = moduleProvider
// For `import provider from` without esModuleInterop: a copy, since Medusa follows `default`
// chains until an object has none.
module.exports.default = { ...moduleProvider }
module.exports.BridgeLockingProvider = BridgeLockingProvider
module.exports.createBridgeLockingProvider = createBridgeLockingProvider
module.exports.loader = loader
/** Whether errors are MedusaError instances (@medusajs/framework is installed). */
module.exports.usesMedusaErrors = utils !== null
/** The `type` of every error that is neither a lock conflict nor invalid_data: a server-side failure. */
module.exports.LOCKING_BRIDGE_ERROR = LOCKING_BRIDGE_ERROR
