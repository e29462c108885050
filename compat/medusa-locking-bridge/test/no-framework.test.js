"use strict"

// Without the optional peer @medusajs/framework: the package loads, exports the same plain module
// object, and throws Errors with the same `type` and `message` as stock's MedusaErrors.
//
// node --test runs every test file in its own process, so hiding the framework here (by making
// its resolution fail, as it would if it were not installed) affects this file only.

const Module = require("node:module")
const { describe, test } = require("node:test")
const assert = require("node:assert/strict")

assert.ok(
  !Object.keys(require.cache).some((f) => f.includes(`${"@medusajs"}/framework`)),
  "this file must run in a process that has not loaded @medusajs/framework"
)
const resolve = Module._resolveFilename
Module._resolveFilename = function (request, ...rest) {
  if (request === "@medusajs/framework" || request.startsWith("@medusajs/framework/")) {
    const err = new Error(`Cannot find module '${request}'`)
    err.code = "MODULE_NOT_FOUND"
    throw err
  }
  return resolve.call(this, request, ...rest)
}

const { useBridgeEnv } = require("../test-support/env")
const pkg = require("..")

const env = useBridgeEnv()

function plainError(type, message) {
  return (err) => {
    assert.equal(Object.getPrototypeOf(err), Error.prototype, `a plain Error, got ${err?.constructor?.name}`)
    assert.equal(err.type, type)
    assert.equal(err.message, message)
    return true
  }
}

describe("without @medusajs/framework", () => {
  test("the framework really is hidden", () => {
    assert.throws(() => require("@medusajs/framework/utils"), { code: "MODULE_NOT_FOUND" })
    assert.equal(pkg.usesMedusaErrors, false)
  })

  test("the export is the plain {module, services, loaders} object", () => {
    assert.equal(pkg.module, "locking")
    assert.deepEqual(pkg.services, [pkg.BridgeLockingProvider])
    assert.deepEqual(pkg.loaders, [pkg.loader])
    assert.equal(pkg.BridgeLockingProvider.identifier, "locking-bridge")
  })

  test("conflicts are Errors with stock's type and message", async () => {
    const locks = env.provider()
    await locks.acquire("nf_key", { ownerId: "a", expire: 10 })
    await assert.rejects(locks.acquire("nf_key", { ownerId: "b" }), plainError("conflict", 'Failed to acquire lock for key "nf_key"'))
    await assert.rejects(locks.execute("nf_key", async () => "never", { timeout: 1 }), plainError("conflict", "Timed-out acquiring lock."))
    assert.equal(await locks.release("nf_key", { ownerId: "a" }), true)
  })

  test("a lost lease rejects with a plain \"Lost the lock\" Error", async () => {
    const locks = env.provider()
    const err = await locks
      .execute("nf_lost", async (signal) => {
        await env.raw.del("medusa_lock:nf_lost")
        await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }))
        return "ignored"
      }, { expire: 1 })
      .catch((e) => e)
    assert.equal(Object.getPrototypeOf(err), Error.prototype)
    assert.equal(err.type, "conflict")
    assert.match(err.message, /^Lost the lock for key\(s\) "nf_lost" while the job was still running/)
  })

  test("client-side errors are plain Errors too", async () => {
    const locks = env.provider()
    await assert.rejects(locks.acquire("nf_empty", { ownerId: "" }), (err) => {
      assert.equal(Object.getPrototypeOf(err), Error.prototype)
      assert.equal(err.type, "invalid_data")
      return true
    })
  })
})
