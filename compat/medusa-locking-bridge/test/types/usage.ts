// Type-checks index.d.ts the way TypeScript users of the package use it: `make node-types` runs
// `tsc --noEmit --strict` on this file (never run, only compiled). Every statement is a use the
// README documents; the @medusajs/types imports check that the declarations fit what Medusa's
// module loader and Locking module expect. A `@ts-expect-error` line must stay an error.

/// <reference path="./medusa-peers.d.ts" />

import type { ILockingProvider } from "@medusajs/types"
import type { ModuleProvider, ModuleProviderExports } from "@medusajs/types"
import moduleProvider, {
  BridgeLockingProvider,
  createBridgeLockingProvider,
  loader,
  loaders,
  module,
  services,
  usesMedusaErrors,
  LOCKING_BRIDGE_ERROR,
} from "../.."
import type { BridgeLockingError, BridgeLockingOptions, BridgeLogger, Fencing } from "../.."
import pkg = require("../..")

// medusa-config: the provider registration of the package README.
const options: BridgeLockingOptions = {
  url: "wss://locks.internal:7420/ws",
  token: process.env.LOCKING_BRIDGE_TOKEN,
  waitLockingTimeout: 5,
  connectTimeoutMs: 3000,
  handshakeTimeoutMs: 10000,
  reconnectMinDelayMs: 100,
  reconnectMaxDelayMs: 5000,
  heartbeatIntervalMs: 1000,
  program: "medusa-worker",
  wsOptions: { ca: "-----BEGIN CERTIFICATE-----" },
  lazyConnect: false,
}
// Several bridges, tried in order: an array, or one string of URLs separated by commas.
const failover: BridgeLockingOptions = { url: ["wss://locks-a.internal:7420/ws", "wss://locks-b.internal:7420/ws"], lazyConnect: true }
const fromEnv: BridgeLockingOptions = { url: process.env.LOCKING_BRIDGE_URLS ?? "ws://a:7420/ws,ws://b:7420/ws" }
void [failover, fromEnv]
// @ts-expect-error url is a string or an array of strings
const badUrl: BridgeLockingOptions = { url: 7420 }
void badUrl
const registration: ModuleProvider = {
  resolve: "@locktui/medusa-locking-bridge",
  id: "locking-bridge",
  is_default: true,
  options: { ...options },
}
void registration

// What Medusa's loader resolves: ModuleProvider(Modules.LOCKING, {services, loaders}).
const asModuleProvider: ModuleProviderExports<BridgeLockingProvider> = moduleProvider
const asNamedExports: ModuleProviderExports<BridgeLockingProvider> = { module, services, loaders }
const moduleName: "locking" = moduleProvider.module
const identifier: "locking-bridge" = services[0].identifier
void [asModuleProvider, asNamedExports, moduleName, identifier, loader, usesMedusaErrors === true]
// `import pkg = require()` sees the same object as the default export plus the named exports.
const viaRequire: ModuleProviderExports = pkg
void [viaRequire, pkg.createBridgeLockingProvider, pkg.default.services[0] === pkg.BridgeLockingProvider]

// Any Node app: createBridgeLockingProvider, as in the package README.
const logger: BridgeLogger = { info: (m) => console.log(m), error: (m) => console.error(m) }
const locks = createBridgeLockingProvider({ url: "ws://127.0.0.1:7420/ws", token: "t", logger })
const asLockingProvider: ILockingProvider = locks
void asLockingProvider

async function use(): Promise<void> {
  await locks.ready()
  await locks.ready(5000)
  const total: number = await locks.execute(["cart:1", "inventory:sku-1"], async (signal) => {
    // The job always gets a signal (also for an empty key list).
    signal.throwIfAborted()
    return signal.aborted ? 0 : 42
  }, { timeout: 5, expire: 60 })
  const viaString: string = await locks.execute("cart:2", async () => "done")
  await locks.acquire("migration", { ownerId: "runner-1", expire: 3600 })
  await locks.acquire(["a", "b"], { ownerId: null, awaitQueue: true })
  await locks.acquire("c", { provider: "locking-bridge" }) // the Locking module's own argument passes through
  // Fencing tokens (docs/fencing.md): the job's second argument, and acquire's filled args.fencing.
  const fenced: number | undefined = await locks.execute("cart:3", async (signal, fencing) => fencing.fencingToken)
  const fencing: Fencing = await locks.acquire("d", { ownerId: "runner-1", fencing: {} })
  const tokenOfD: number | undefined = fencing.fencingTokens["d"] ?? fencing.fencingToken
  void [fenced, tokenOfD]
  const released: boolean = await locks.release("migration", { ownerId: "runner-1" })
  await locks.releaseAll({ ownerId: "runner-1" })
  await locks.releaseAll()
  const seconds: number = locks.waitLockingTimeout
  void [total, viaString, released, seconds]

  try {
    await locks.acquire("held", { ownerId: "someone" })
  } catch (e) {
    const err = e as BridgeLockingError
    const type: "conflict" | "invalid_data" | "locking_bridge_error" = err.type
    const serverSide: boolean = err.type === LOCKING_BRIDGE_ERROR
    const code: string | undefined = err.bridgeCode
    void [type, serverSide, code, err.message]
  }

  // @ts-expect-error execute needs a job
  await locks.execute("k")
  // @ts-expect-error release resolves a boolean, not a string
  const wrong: string = await locks.release("k")
  void wrong

  await locks.close()
  await locks.shutdown()
}
void use

// A provider built by Medusa: the constructor takes the provider container's cradle.
BridgeLockingProvider.validateOptions(options)
BridgeLockingProvider.validateOptions(registration.options)
const built = new BridgeLockingProvider({ lockingBridgeClient: undefined }, { waitLockingTimeout: 5 })
void built
