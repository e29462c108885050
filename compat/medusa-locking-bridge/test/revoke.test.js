"use strict"

// An operator's force-release (locktui release --force, the console's d) tells the holder first
// (docs/safety.md, "Force-release"): the execute's signal aborts, and only then does the client
// release the key and anyone else get it. Order is asserted on performance.now().

const { test } = require("node:test")
const assert = require("node:assert/strict")
const { useBridgeEnv, waitFor, locktui } = require("../test-support/env")

const env = useBridgeEnv()
const NS = "medusa_lock:"

test("a force-release aborts the holder's signal before the key is free for anyone else", async () => {
  const holder = env.provider({ program: "holder" })
  const other = env.provider({ program: "waiter" })
  const key = "rv_execute"
  let abortedAt = null
  let started
  const running = new Promise((resolve) => (started = resolve))
  const held = holder
    .execute(key, async (signal) => {
      started()
      await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }))
      abortedAt = performance.now()
    }, { timeout: 5, expire: 30 })
    .catch((e) => e)
  await running
  let enteredAt = null
  const waiting = other.execute(key, async () => (enteredAt = performance.now()), { timeout: 20 })

  const r = await locktui(["release", "--force", key, "--redis", env.redis.url])
  assert.equal(r.code, 0, r.stderr)
  assert.match(r.stdout, /^told the holder of "rv_execute" .*holder \(pid \d+ on .+, bridge client\)/m)
  assert.match(r.stdout, /^freed "rv_execute" at \S+, \S+ after its holder was told$/m)

  const err = await held
  assert.ok(err instanceof Error, "the holder's execute reports the loss")
  assert.match(err.message, /force-released/)
  await waiting
  assert.ok(abortedAt !== null)
  assert.ok(enteredAt > abortedAt, `the waiter entered at ${enteredAt}, before the holder's signal aborted at ${abortedAt}`)
  await waitFor("the key to be free", async () => (await env.raw.exists(NS + key)) === 0)
})
