"use strict"

// Fencing tokens and holder records through the bridge (docs/fencing.md).

const { test } = require("node:test")
const assert = require("node:assert/strict")
const os = require("node:os")
const { useBridgeEnv, holderRecord } = require("../test-support/env")

const env = useBridgeEnv()
const NS = "medusa_lock:"
const recordOf = (key) => holderRecord(env.redis.url, NS, key)

test("execute's job gets the lease's fencing token; the record names this process", async () => {
  const locks = env.provider({ program: "checkout-worker" })
  let seen
  await locks.execute(["fence_b", "fence_a"], async (signal, fencing) => {
    assert.ok(signal instanceof AbortSignal)
    seen = fencing
    const rec = await recordOf("fence_a")
    assert.equal(rec.host, os.hostname())
    assert.equal(rec.pid, String(process.pid))
    assert.equal(rec.prog, "checkout-worker")
    assert.equal(rec.kind, "bridge")
    assert.equal(Number(rec.fence), fencing.fencingTokens.fence_a)
  })
  assert.ok(Number.isSafeInteger(seen.fencingToken))
  assert.equal(seen.fencingToken, seen.fencingTokens.fence_a, "the first key's token stands for both")
  assert.deepEqual(Object.keys(seen.fencingTokens).sort(), ["fence_a", "fence_b"])
})

test("acquire resolves undefined as stock does, or fills args.fencing; tokens rise per key", async () => {
  const locks = env.provider()
  assert.equal(await locks.acquire("fence_k", { ownerId: "o1" }), undefined)
  const again = {}
  assert.equal(await locks.acquire("fence_k", { ownerId: "o1", fencing: again }), again)
  assert.ok(Number.isSafeInteger(again.fencingToken))
  assert.equal(await locks.release("fence_k", { ownerId: "o1" }), true)

  const next = await locks.acquire("fence_k", { ownerId: "o2", fencing: {} })
  assert.ok(next.fencingToken > again.fencingToken, `${next.fencingToken} > ${again.fencingToken}`)
  const reentry = await locks.acquire("fence_k", { ownerId: "o2", fencing: {} })
  assert.equal(reentry.fencingToken, next.fencingToken, "a re-entry joins the hold and keeps its token")
  assert.equal(await locks.release("fence_k", { ownerId: "o2" }), true)
})
