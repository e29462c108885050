"use strict"

// The one timer of a connection's deadlines (lib/deadlines.js): armed for the earliest deadline,
// re-armed only for an earlier one. Deadlines that move later leave it armed early; none passes
// unchecked.

const { test } = require("node:test")
const assert = require("node:assert/strict")
const { Deadlines } = require("../lib/deadlines")

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** Deadlines that record when each callback ran; stopped at the end of the test. */
function watch(t, timeoutMs, marginMs) {
  const seen = { connection: null, leases: [] }
  const deadlines = new Deadlines(
    { timeoutMs, marginMs, since: performance.now() },
    {
      connection: () => {
        seen.connection = performance.now()
        deadlines.stop()
      },
      lease: (lease, why) => seen.leases.push({ lease, why, at: performance.now() }),
    }
  )
  t.after(() => deadlines.stop())
  return { deadlines, seen }
}

test("a lease deadline earlier than the armed timer re-arms it, and fires no earlier than the deadline", async (t) => {
  const { deadlines, seen } = watch(t, 2000, 500)
  const lease = { id: "L1" }
  const sentAt = performance.now()
  deadlines.valid(lease, sentAt, 100)
  assert.equal(deadlines.timerAt, sentAt + 100)
  await sleep(400)
  assert.equal(seen.leases.length, 1)
  assert.equal(seen.leases[0].lease, lease)
  assert.equal(seen.leases[0].why, "deadline")
  assert.ok(seen.leases[0].at >= sentAt + 100, "not before the deadline")
  assert.equal(seen.connection, null)
  assert.equal(deadlines.timerAt, deadlines.connectionDeadline, "re-armed for the connection")
})

test("deadlines that move later leave the timer armed; the connection deadline still fires", async (t) => {
  const { deadlines, seen } = watch(t, 1000, 200)
  const lease = { id: "L1" }
  deadlines.valid(lease, performance.now(), 60000)
  const armed = deadlines.timerAt
  // Answers move the connection deadline later for a while, without re-arming the timer.
  for (let i = 0; i < 10; i++) {
    await sleep(100)
    deadlines.answered(performance.now())
    deadlines.valid(lease, performance.now(), 60000)
  }
  assert.ok(deadlines.timerAt > armed, "the early timer fired, found nothing due, and re-armed")
  assert.equal(seen.connection, null)
  const last = deadlines.proof
  await sleep(1200)
  assert.ok(seen.connection !== null, "the connection deadline passed")
  assert.ok(seen.connection >= last + 800, "not before proof + timeout - margin")
  assert.deepEqual(seen.leases, [])
})

test("a drain deadline earlier than the armed timer re-arms it", async (t) => {
  const { deadlines, seen } = watch(t, 5000, 100)
  const lease = { id: "L1" }
  deadlines.valid(lease, performance.now(), 60000)
  const at = performance.now()
  deadlines.drain(200)
  await sleep(400)
  assert.equal(seen.leases.length, 1)
  assert.equal(seen.leases[0].why, "drain")
  assert.ok(seen.leases[0].at >= at + 100)
})
