"use strict"

// The bridge client and the stock @medusajs/locking-redis 2.21.2 provider on the same Redis:
// each sees the other's locks.

const { describe, test } = require("node:test")
const assert = require("node:assert/strict")
const { useBridgeEnv, buildStockProvider, sleep } = require("../test-support/env")

let stock
const env = useBridgeEnv({
  setup: async (env) => {
    stock = await buildStockProvider({ redisUrl: env.redis.url })
    env.onClose(() => stock.close())
  },
})

const notAcquired = (key) => `Failed to acquire lock for key "${key}"`

describe("exclusion between stock locking-redis and the bridge client", () => {
  test("stock holds: the bridge client cannot acquire, then can after the release", async () => {
    const locks = env.provider()
    await stock.provider.acquire("x_stock_holds", { ownerId: "stock-owner", expire: 30 })
    await assert.rejects(locks.acquire("x_stock_holds", { ownerId: "bridge-owner" }), { type: "conflict", message: notAcquired("x_stock_holds") })
    assert.equal(await locks.release("x_stock_holds", { ownerId: "bridge-owner" }), false)
    // The same owner name is the same owner, whoever took the lock.
    await locks.acquire("x_stock_holds", { ownerId: "stock-owner" })
    assert.equal(await stock.provider.release("x_stock_holds", { ownerId: "stock-owner" }), true)
    await locks.acquire("x_stock_holds", { ownerId: "bridge-owner" })
    assert.equal(await locks.release("x_stock_holds", { ownerId: "bridge-owner" }), true)
  })

  test("the bridge client holds: stock cannot acquire, then can after the release", async () => {
    const locks = env.provider()
    await locks.acquire("x_bridge_holds", { expire: 30 })
    await assert.rejects(stock.provider.acquire("x_bridge_holds"), { type: "conflict", message: notAcquired("x_bridge_holds") })
    await assert.rejects(stock.provider.acquire("x_bridge_holds", { ownerId: "stock-owner" }), { type: "conflict" })
    // Anonymous locks are shared: stock's release() without an owner releases it.
    assert.equal(await stock.provider.release("x_bridge_holds"), true)
    await stock.provider.acquire("x_bridge_holds", { ownerId: "stock-owner" })
    assert.equal(await stock.provider.release("x_bridge_holds", { ownerId: "stock-owner" }), true)
  })

  test("a bridge lease blocks stock's execute until the job ends", async () => {
    const locks = env.provider()
    let stockRan = false
    let bridgeJobDone = false
    let started
    const jobStarted = new Promise((resolve) => (started = resolve))
    const bridgeRun = locks.execute("x_lease", async () => {
      started()
      await sleep(300)
      bridgeJobDone = true
      return "bridge"
    })
    await jobStarted
    const stockRun = stock.provider.execute("x_lease", async () => {
      stockRan = true
      assert.equal(bridgeJobDone, true, "stock's job ran while the bridge lease was held")
      return "stock"
    })
    assert.deepEqual(await Promise.all([bridgeRun, stockRun]), ["bridge", "stock"])
    assert.equal(stockRan, true)
  })

  test("a stock execute blocks the bridge client's execute until the job ends", async () => {
    const locks = env.provider()
    let stockJobDone = false
    let started
    const jobStarted = new Promise((resolve) => (started = resolve))
    const stockRun = stock.provider.execute("x_stock_lease", async () => {
      started()
      await sleep(300)
      stockJobDone = true
      return "stock"
    })
    await jobStarted
    const bridgeRun = locks.execute("x_stock_lease", async () => {
      assert.equal(stockJobDone, true, "the bridge job ran while stock held the key")
      return "bridge"
    }, { timeout: 30 })
    assert.deepEqual(await Promise.all([stockRun, bridgeRun]), ["stock", "bridge"])
  })

  test("mixed execute buys from both providers leave stock at 0, never overlapping", async () => {
    const one = env.provider()
    const two = env.provider()
    let stockCount = 5
    let active = 0
    let overlaps = 0
    const buy = async () => {
      active++
      if (active > 1) overlaps++
      if (stockCount > 0) {
        await sleep(10)
        stockCount--
      }
      active--
    }
    const runs = []
    for (let i = 0; i < 12; i++) {
      const via = [one, stock.provider, two][i % 3]
      // Stock's execute keeps a timer of `timeout` seconds alive even after success: keep it at
      // the default 5 s for stock, generous for the bridge client.
      runs.push(via.execute("x_item", buy, via === stock.provider ? {} : { timeout: 30 }))
    }
    await Promise.all(runs)
    assert.equal(overlaps, 0)
    assert.equal(stockCount, 0)
  })
})
