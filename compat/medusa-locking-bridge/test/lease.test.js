"use strict"

// The "Lost the lock" conflict a lease's signal aborts with when the client finds the lease lost
// by itself: the bridge's prepared message, or, from a bridge that sends none, this package's own.

const { describe, test } = require("node:test")
const assert = require("node:assert/strict")
const { Lease } = require("../lib/lease")
const { takesNoArguments } = require("../lib/provider")

const STOCK = `Lost the lock for key(s) "b", "a" while the job was still running: the lease expired before it could be renewed. Increase "expire" if the job is expected to run this long.`

describe("a lease lost by the client itself", () => {
  test("aborts with the bridge's lost_message, verbatim, and the cause", () => {
    const lease = new Lease(null, "L1", "execute:x", ["b", "a", "b"], STOCK)
    const cause = new Error("connection lost")
    lease.lose({ cause })
    assert.equal(lease.signal.aborted, true)
    assert.equal(lease.signal.reason.message, STOCK)
    assert.equal(lease.signal.reason.type, "conflict")
    assert.equal(lease.signal.reason.cause, cause)
  })

  test("from a bridge that sent no lost_message, says so, naming the keys in the caller's order", () => {
    const lease = new Lease(null, "L1", "execute:x", ["b", "a", "b"])
    lease.lose({})
    const err = lease.signal.reason
    assert.equal(err.type, "conflict")
    assert.equal(
      err.message,
      `locking-bridge: lost the lock for key(s) "b", "a" while the job was still running (the bridge sent no lost_message with the lease, so this is not stock's message: upgrade the bridge)`
    )
  })

  test("a reason given (the bridge's lease_lost) wins over the prepared message", () => {
    const lease = new Lease(null, "L1", "execute:x", ["a"], STOCK)
    const reason = new Error("from lease_lost")
    lease.lose({ reason })
    assert.equal(lease.signal.reason, reason)
  })
})

describe("a lease's signal and fencing tokens, made when first read", () => {
  test("a signal first read after the loss is already aborted, with the same reason", () => {
    const lease = new Lease(null, "L1", "execute:x", ["a"], STOCK)
    lease.lose({ cause: new Error("deadline") })
    assert.equal(lease.state, "lost")
    assert.equal(lease.signal.aborted, true)
    assert.equal(lease.signal.reason, lease.reason)
    assert.equal(lease.signal.reason.message, STOCK)
    assert.equal(lease.signal, lease.signal, "one signal per lease")
  })

  test("a signal read before the loss aborts then, once, with the reason", () => {
    const lease = new Lease(null, "L1", "execute:x", ["a"], STOCK)
    const signal = lease.signal
    let aborts = 0
    signal.addEventListener("abort", () => aborts++)
    assert.equal(signal.aborted, false)
    lease.lose({ cause: new Error("deadline") })
    lease.lose({ cause: new Error("again") })
    assert.equal(aborts, 1)
    assert.equal(signal.reason, lease.reason)
  })

  test("fencing tokens come from the grant, copied", () => {
    const tokens = { a: 7 }
    const lease = new Lease(null, "L1", "execute:x", ["a"], STOCK, { fencing_token: 7, fencing_tokens: tokens })
    assert.deepEqual(lease.fencing, { fencingToken: 7, fencingTokens: { a: 7 } })
    assert.notEqual(lease.fencing.fencingTokens, tokens)
    assert.equal(lease.fencing, lease.fencing)
    assert.deepEqual(new Lease(null, "L2", "execute:y", ["a"]).fencing, { fencingToken: undefined, fencingTokens: {} })
  })
})

// execute calls a job that cannot see its arguments without them, so that its lease makes no
// AbortSignal; every job that might read them gets the signal and the tokens.
const takesNone = [async () => {}, () => 1, async() => {}, async (  ) => {}]
const mayRead = [
  async (signal) => signal,
  async (...args) => args,
  async (signal = null) => signal,
  async ({ x } = {}) => x,
  async function () { return arguments[0] },
  function () { return arguments[0] },
  (() => {}).bind(null),
  new Proxy(() => {}, {}),
  async /* a comment */ () => {},
  class {},
  "not a function",
  null,
]

test("takesNoArguments: only arrow functions without parameters", () => {
  for (const fn of takesNone) assert.equal(takesNoArguments(fn), true, String(fn))
  for (const fn of mayRead) assert.equal(takesNoArguments(fn), false, String(fn))
})
