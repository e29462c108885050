"use strict"

// The package as Medusa loads it: MedusaModule.bootstrap of @medusajs/locking 2.21.2 with this
// provider as the default provider (the Locking module has no models, so no database is needed).

const { describe, test } = require("node:test")
const assert = require("node:assert/strict")
const { useBridgeEnv, requireCompat, packageDir, compatDir } = require("../test-support/env")
const { bootstrapLocking } = require("../test-support/medusa")

const { MedusaModule } = requireCompat("@medusajs/framework/modules-sdk")
const { Modules, MedusaError } = requireCompat("@medusajs/framework/utils")
const pkg = require("..")

const NS = "medusa_lock:"
const logs = []
const logger = {
  info: (m) => logs.push(["info", m]),
  warn: (m) => logs.push(["warn", m]),
  error: (m) => logs.push(["error", m]),
  debug: () => {},
  log: () => {},
}
let locking

const env = useBridgeEnv({ setup: async (env) => {
  locking = await bootstrapLocking({ MedusaModule, Modules }, {
    providers: [{ resolve: packageDir, id: "bridge", is_default: true, options: { url: env.bridge.url } }],
    // Module level, where stock reads its tuning; the provider takes it from here too.
    moduleOptions: { waitLockingTimeout: 1 },
    logger,
    cwd: compatDir,
  })
  env.onClose(async () => {
    // Medusa 2.21.2 has no provider shutdown hook: close the client the loader made ourselves.
    await providerOf(locking)?.close()
    MedusaModule.clearInstances()
  })
} })

/** The provider instance the module resolves for id "bridge". */
function providerOf(service) {
  return service?.providerService_?.retrieveProviderRegistration("bridge")
}

describe("the package as a Medusa module provider", () => {
  test("exports ModuleProvider(Modules.LOCKING, {services, loaders}) with identifier locking-bridge", () => {
    assert.equal(pkg.module, "locking")
    assert.equal(pkg.services.length, 1)
    assert.equal(pkg.services[0], pkg.BridgeLockingProvider)
    assert.equal(pkg.services[0].identifier, "locking-bridge")
    assert.deepEqual(pkg.loaders, [pkg.loader])
    assert.equal(pkg.usesMedusaErrors, true)
    assert.equal(typeof pkg.createBridgeLockingProvider, "function")
  })

  test("the loader delivered the provider options; the module made it the default", async () => {
    assert.ok(logs.some(([level, m]) => level === "info" && m.includes(`Connection to the bridge in "locking-bridge" provider established`)), JSON.stringify(logs))
    const provider = providerOf(locking)
    assert.ok(provider instanceof pkg.BridgeLockingProvider, "lp_bridge is this provider")
    assert.equal(locking.defaultProviderId, "bridge")
    assert.equal(provider.waitLockingTimeout, 1, "module-level waitLockingTimeout reaches the provider")
    assert.equal(provider.client_.display, env.bridge.url)
  })

  test("acquire/release through the module lands in Redis under the stock namespace (R2)", async () => {
    assert.equal(await locking.acquire("mod_key", { ownerId: "user_id_123", expire: 10 }), undefined)
    assert.equal(await env.raw.get(NS + "mod_key"), "user_id_123")
    assert.equal(await locking.release("mod_key", { ownerId: "user_id_456" }), false)
    await assert.rejects(locking.acquire("mod_key", { ownerId: "user_id_456" }), (err) => {
      assert.ok(err instanceof MedusaError)
      assert.equal(err.type, "conflict")
      assert.equal(err.message, 'Failed to acquire lock for key "mod_key"')
      return true
    })
    assert.equal(await locking.release("mod_key", { ownerId: "user_id_123", provider: "bridge" }), true)
  })

  test("execute through the module serializes buys (R1) and holds keys until done (M7)", async () => {
    let stock = 5
    const buy = async () => {
      if (stock > 0) {
        await new Promise((resolve) => setTimeout(resolve, 10))
        stock--
      }
    }
    await Promise.all(Array.from({ length: 10 }, () => locking.execute("mod_item", buy, { timeout: 30 })))
    assert.equal(stock, 0)
    const result = await locking.execute("mod_held", async () => {
      await assert.rejects(locking.acquire("mod_held", { ownerId: "someone_else" }), { type: "conflict" })
      return "done"
    })
    assert.equal(result, "done")
    await locking.acquire("mod_held", { ownerId: "someone_else" })
    assert.equal(await locking.release("mod_held", { ownerId: "someone_else" }), true)
  })

  test("the module-level waitLockingTimeout bounds execute (1 s here)", async () => {
    await locking.acquire("mod_wait", { ownerId: "holder", expire: 30 })
    await assert.rejects(locking.execute("mod_wait", async () => "never"), { type: "conflict", message: "Timed-out acquiring lock." })
    assert.equal(await locking.release("mod_wait", { ownerId: "holder" }), true)
  })

  test("releaseAll through the module (R9)", async () => {
    await locking.acquire("mod_ra_mine", { ownerId: "owner_a", expire: 10 })
    await locking.acquire("mod_ra_theirs", { ownerId: "owner_b", expire: 10 })
    await locking.releaseAll({ ownerId: "owner_a" })
    assert.equal(await env.raw.get(NS + "mod_ra_mine"), null)
    assert.equal(await env.raw.get(NS + "mod_ra_theirs"), "owner_b")
    assert.equal(await locking.release("mod_ra_theirs", { ownerId: "owner_b" }), true)
  })
})

describe("the loader and constructor on their own", () => {
  test("a missing url fails with stock's style of message", async () => {
    await assert.rejects(pkg.loader({ container: { register() {} }, options: {} }), {
      message: 'No "url" provided in "locking" module, "locking-bridge" provider options. It is required for the "locking-bridge" Module provider.',
    })
    assert.throws(() => pkg.BridgeLockingProvider.validateOptions({}), /No "url" provided/)
  })

  test("constructing without the loader names the fix", () => {
    assert.throws(() => new pkg.BridgeLockingProvider({}, {}), /the provider's loader did not run/)
  })
})
