"use strict"

// What a shopper sees of this package's errors: each kind of error it produces, fed through
// Medusa's own HTTP error handler (@medusajs/framework's getHttpResponseFromError and
// errorHandler). A lock conflict answers exactly as stock's does (409); a mistake in the
// caller's arguments answers 400 with its message; every server-side failure answers Medusa's
// generic 500, which names neither the bridge, nor its URL, nor the token, while the server log
// gets the whole error.

const http = require("node:http")
const { describe, test } = require("node:test")
const assert = require("node:assert/strict")
const { useBridgeEnv, requireCompat, buildStockProvider, freePort } = require("../test-support/env")
const { LOCKING_BRIDGE_ERROR } = require("..")
const { errorType, bridgeError, outcomeUnknown, lockLost } = require("../lib/errors")

const { getHttpResponseFromError, errorHandler } = requireCompat("@medusajs/framework/http")
const { MedusaError } = requireCompat("@medusajs/framework/utils")

const NS = "medusa_lock:"
const TOKEN = "http-errors-token"
/** Medusa's answer to an error whose type it does not know. */
const GENERIC_500 = { code: "unknown_error", type: "unknown_error", message: "An unknown error occurred." }

let stock
const env = useBridgeEnv({
  token: TOKEN,
  setup: async (env) => {
    stock = await buildStockProvider({ redisUrl: env.redis.url })
    env.onClose(() => stock.close())
  },
})

/** The error a call rejects with. */
async function rejection(promise) {
  return promise.then(
    (value) => assert.fail(`expected a rejection, got ${JSON.stringify(value)}`),
    (err) => err
  )
}

/**
 * Runs err through Medusa's errorHandler as a route would: returns {statusCode, body, logged}
 * (logged: what Medusa wrote to its logger at level error).
 */
function throughMedusa(err) {
  const logged = []
  const logger = { error: (e) => logged.push(e), info: () => {}, warn: () => {} }
  const req = { scope: { resolve: () => logger }, path: "/store/carts/cart_1/complete" }
  const res = {
    status(code) {
      this.statusCode = code
      return this
    },
    json(body) {
      this.body = body
    },
  }
  errorHandler()(err, req, res, () => {})
  return { statusCode: res.statusCode, body: res.body, logged }
}

/**
 * Asserts that err is a server-side failure (bridgeCode code) that Medusa answers with its generic
 * 500 and nothing of the error, and logs in full; urls are the bridge URLs it must not show.
 */
function assertGeneric500(err, code, urls) {
  assert.ok(err instanceof MedusaError, `a MedusaError, got ${err?.constructor?.name}: ${err?.message}`)
  assert.equal(err.type, LOCKING_BRIDGE_ERROR)
  assert.equal(err.bridgeCode, code)
  const response = getHttpResponseFromError(err)
  assert.deepEqual(response, { statusCode: 500, body: GENERIC_500 })
  const text = JSON.stringify(response.body)
  for (const url of urls) assert.ok(!text.includes(url), `the body names ${url}`)
  assert.doesNotMatch(text, /token|locking-bridge/i)
  const handled = throughMedusa(err)
  assert.equal(handled.statusCode, 500)
  assert.deepEqual(handled.body, GENERIC_500)
  assert.equal(handled.logged[0], err, "the server log gets the error itself, message and bridgeCode")
}

describe("errors through Medusa's HTTP error handler", () => {
  test("a lock conflict answers exactly as stock's conflict does (409)", async () => {
    const locks = env.provider({ token: TOKEN })
    await locks.acquire("he_conflict", { ownerId: "holder", expire: 30 })
    const ours = await rejection(locks.acquire("he_conflict", { ownerId: "other" }))
    const theirs = await rejection(stock.provider.acquire("he_conflict", { ownerId: "other" }))
    assert.ok(ours instanceof MedusaError)
    assert.equal(ours.type, "conflict")
    assert.equal(ours.message, theirs.message)
    assert.equal(ours.bridgeCode, undefined)
    const response = getHttpResponseFromError(ours)
    assert.equal(response.statusCode, 409)
    assert.deepEqual(response, getHttpResponseFromError(theirs))
    const timedOut = await rejection(locks.execute("he_conflict", async () => "never", { timeout: 1 }))
    assert.equal(getHttpResponseFromError(timedOut).statusCode, 409)
    assert.equal(await locks.release("he_conflict", { ownerId: "holder" }), true)
  })

  test("a mistake in the caller's arguments stays invalid_data (400 with its message)", async () => {
    const locks = env.provider({ token: TOKEN })
    const err = await rejection(locks.acquire("he_args", { ownerId: "" }))
    assert.equal(err.type, "invalid_data")
    assert.deepEqual(getHttpResponseFromError(err), { statusCode: 400, body: { code: undefined, type: "invalid_data", message: err.message } })
  })

  test("a token the bridge refuses: generic 500", async () => {
    const locks = env.provider({ token: "wrong-token" })
    const err = await rejection(locks.acquire("he_token", { ownerId: "o" }))
    assert.match(err.message, /refused the token \(HTTP 401/)
    assertGeneric500(err, "unauthorized", [env.bridge.url, `127.0.0.1:${env.bridge.port}`])
    const missing = env.provider({ token: undefined })
    assertGeneric500(await rejection(missing.release("he_token", { ownerId: "o" })), "unauthorized", [env.bridge.url])
  })

  test("an unreachable bridge URL: generic 500", async () => {
    const port = await freePort()
    const url = `ws://127.0.0.1:${port}/ws`
    const locks = env.provider({ url, token: TOKEN, connectTimeoutMs: 200 })
    const err = await rejection(locks.acquire("he_down", { ownerId: "o" }))
    assert.match(err.message, /ECONNREFUSED/)
    assertGeneric500(err, "not_connected", [url, String(port)])
  })

  test("a server that is not a bridge, a heartbeatIntervalMs the bridge refuses, a closed client: generic 500", async () => {
    const server = http.createServer((req, res) => res.writeHead(404).end("not here"))
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve))
    env.onClose(() => new Promise((resolve) => server.close(resolve)))
    const other = `ws://127.0.0.1:${server.address().port}/ws`
    const notBridge = env.provider({ url: other, token: TOKEN })
    assertGeneric500(await rejection(notBridge.acquire("he_404")), "refused", [other])
    const slowPings = env.provider({ token: TOKEN, heartbeatIntervalMs: 60000 })
    assertGeneric500(await rejection(slowPings.acquire("he_hb")), "heartbeat_interval", [env.bridge.url])
    const closed = env.provider({ token: TOKEN })
    await closed.close()
    assertGeneric500(await rejection(closed.acquire("he_closed")), "closed", [env.bridge.url])
  })

  test("an error of the bridge's Redis (redis_error): generic 500", async () => {
    const locks = env.provider({ token: TOKEN })
    await env.raw.lpush(NS + "he_wrongtype", "not a lock") // GET on a list: WRONGTYPE
    try {
      const err = await rejection(locks.release("he_wrongtype", { ownerId: "o" }))
      assert.match(err.message, /WRONGTYPE/)
      assertGeneric500(err, "redis_error", [env.bridge.url])
    } finally {
      await env.raw.del(NS + "he_wrongtype")
    }
  })
})

describe("the rule that types every error (errorType)", () => {
  test("conflict and invalid_data stay; every other type the bridge reports becomes locking_bridge_error", () => {
    for (const reported of ["conflict", "invalid_data"]) assert.equal(errorType(reported), reported)
    for (const reported of ["unexpected_state", "not_allowed", "not_found", "unauthorized", "invalid_argument", "", undefined, 42]) {
      assert.equal(errorType(reported), LOCKING_BRIDGE_ERROR, `reported ${JSON.stringify(reported)}`)
    }
    const redis = bridgeError({ type: "unexpected_state", code: "redis_error", message: "release \"k\": READONLY" })
    assert.equal(redis.type, LOCKING_BRIDGE_ERROR)
    assert.equal(redis.bridgeCode, "redis_error")
    assert.equal(redis.message, "release \"k\": READONLY")
    const forbidden = bridgeError({ type: "not_allowed", code: "key_forbidden", message: "key \"k\" is not allowed" })
    assert.equal(getHttpResponseFromError(forbidden).statusCode, 500)
    const conflict = bridgeError({ type: "conflict", code: "not_acquired", message: 'Failed to acquire lock for key "k"' })
    assert.deepEqual([conflict.type, conflict.bridgeCode, getHttpResponseFromError(conflict).statusCode], ["conflict", undefined, 409])
    const tooMany = bridgeError({ type: "invalid_data", code: "too_many_keys", message: "more than 64 keys" })
    assert.deepEqual(getHttpResponseFromError(tooMany), { statusCode: 400, body: { code: undefined, type: "invalid_data", message: "more than 64 keys" } })
  })

  // Defect: every invalid_data of the bridge stayed invalid_data (a 400 showing its message),
  // also bad_request, unknown_op and duplicate_id: an incompatibility of this client and the
  // bridge, not a mistake of the caller.
  test("only the caller's own mistakes are invalid_data: the bridge's bad_request, unknown_op and duplicate_id are server-side failures", () => {
    for (const code of ["bad_request", "unknown_op", "duplicate_id", "some_future_code"]) {
      assert.equal(errorType("invalid_data", code), LOCKING_BRIDGE_ERROR, code)
      const err = bridgeError({ type: "invalid_data", code, message: `json: unknown field "claim"` })
      assert.equal(err.type, LOCKING_BRIDGE_ERROR, code)
      assert.equal(err.bridgeCode, code)
      assertGeneric500(err, code, [])
    }
    for (const code of ["too_many_keys", "frame_too_large", undefined]) {
      assert.equal(errorType("invalid_data", code), "invalid_data", String(code))
    }
    assert.equal(errorType("conflict", "not_acquired"), "conflict")
    assert.equal(errorType("unexpected_state", "too_many_keys"), LOCKING_BRIDGE_ERROR, "the code alone makes nothing invalid_data")
  })

  test("an unknown outcome is a server-side failure; a lost lease stays a conflict caused by one", () => {
    const unknown = outcomeUnknown("release", { keys: ["k"], owner: "o" }, "the bridge at ws://h/ws no longer knows the request")
    assert.equal(unknown.type, LOCKING_BRIDGE_ERROR)
    assert.equal(unknown.bridgeCode, "outcome_unknown")
    assert.deepEqual(getHttpResponseFromError(unknown), { statusCode: 500, body: GENERIC_500 })
    const cause = bridgeError({ type: "unexpected_state", code: "connection_lost", message: "gone" })
    const lost = lockLost(["k"], 'Lost the lock for key(s) "k" while the job was still running', cause)
    assert.equal(lost.type, "conflict")
    assert.equal(getHttpResponseFromError(lost).statusCode, 409)
    assert.equal(lost.cause.type, LOCKING_BRIDGE_ERROR)
  })
})
