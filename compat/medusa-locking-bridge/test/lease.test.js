"use strict"

// The "Lost the lock" conflict a lease's signal aborts with when the client finds the lease lost
// by itself: the bridge's prepared message, or, from a bridge that sends none, this package's own.

const { describe, test } = require("node:test")
const assert = require("node:assert/strict")
const { Lease } = require("../lib/lease")

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
