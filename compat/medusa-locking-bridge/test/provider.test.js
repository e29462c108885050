"use strict"

// The provider API against a real bridge and Redis: the black-box cases of Medusa's locking-redis
// suites (R1–R13, T1, M7) and stock's argument coercions.

const { describe, test } = require("node:test")
const assert = require("node:assert/strict")
const { useBridgeEnv, requireCompat, sleep } = require("../test-support/env")

const { MedusaError } = requireCompat("@medusajs/framework/utils")
const env = useBridgeEnv()
const NS = "medusa_lock:"

/** Asserts that promise rejects with a conflict MedusaError whose message is message. */
async function rejectsConflict(promise, message) {
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof MedusaError, `expected a MedusaError, got ${err?.stack ?? err}`)
    assert.equal(err.type, "conflict")
    assert.equal(err.message, message)
    return true
  })
}

const notAcquired = (key) => `Failed to acquire lock for key "${key}"`

/**
 * execute resolves once its release is sent: the client's next request on the key comes after
 * it, so a plain acquire (which fails at once on a held key) gets the key.
 */
async function assertReleasedForThisClient(locks, key) {
  await locks.acquire(key, { ownerId: "probe" })
  assert.equal(await locks.release(key, { ownerId: "probe" }), true)
}

describe("Medusa locking-redis suite (R, T, M cases)", () => {
  test("R1: execute serializes parallel buys (stock ends at 0)", async () => {
    const locks = env.provider()
    let stock = 5
    const buy = async () => {
      if (stock > 0) {
        await sleep(10)
        stock--
      }
    }
    await Promise.all(Array.from({ length: 10 }, buy))
    assert.equal(stock, -5, "without a lock the buys overlap")
    stock = 5
    // A generous timeout keeps a loaded machine from failing on waits; exclusion is the point.
    await Promise.all(Array.from({ length: 10 }, () => locks.execute("item_1", buy, { timeout: 30 })))
    assert.equal(stock, 0)
  })

  test("R2: acquire lock and release it", async () => {
    const locks = env.provider()
    assert.equal(await locks.acquire("key_name", { ownerId: "user_id_123" }), undefined)
    assert.equal(await locks.release("key_name", { ownerId: "user_id_456" }), false)
    await rejectsConflict(locks.acquire("key_name", { ownerId: "user_id_456" }), notAcquired("key_name"))
    assert.equal(await locks.release("key_name", { ownerId: "user_id_123" }), true)
  })

  test("R3: acquire and release during parallel calls", async () => {
    const locks = env.provider()
    const k = "mySpecialKey"
    const u1 = { ownerId: "user_id_456" }
    const u2 = { ownerId: "user_id_000" }
    assert.deepEqual(await Promise.all([locks.acquire(k, u1), locks.acquire(k, u1)]), [undefined, undefined])
    const second = await Promise.allSettled([locks.acquire(k, u2), locks.acquire(k, u2)])
    for (const r of second) {
      assert.equal(r.status, "rejected")
      assert.equal(r.reason.message, notAcquired(k))
    }
    assert.equal(await locks.acquire(k, u1), undefined)
    assert.equal(await locks.release(k, u2), false)
    assert.equal(await locks.release(k, u1), true)
  })

  test("R4: no owner means \"*\", which never re-enters", async () => {
    const locks = env.provider()
    const k = "r4_key"
    await locks.acquire(k)
    assert.equal(await env.raw.get(NS + k), "*")
    await rejectsConflict(locks.acquire(k), notAcquired(k))
    await rejectsConflict(locks.acquire(k, { ownerId: null }), notAcquired(k))
    await rejectsConflict(locks.acquire(k, { ownerId: "user_id_000" }), notAcquired(k))
    assert.equal(await locks.release(k, { ownerId: "user_id_000" }), false)
    assert.equal(await locks.release(k), true)
  })

  test("R5: a failing job releases its lock", async () => {
    const locks = env.provider()
    const failure = new Error("fn1 failed")
    let calls1 = 0
    let calls2 = 0
    const err = await locks
      .execute("lock_key_r5", async () => {
        calls1++
        throw failure
      })
      .catch((e) => e)
    assert.equal(err, failure, "the job's error propagates unchanged")
    assert.equal(await locks.execute("lock_key_r5", async () => ++calls2), 1)
    assert.deepEqual([calls1, calls2], [1, 1])
  })

  test("R6: a waiter times out while the key is held, a later one gets it", async () => {
    const locks = env.provider()
    const k = "lock_key_r6"
    const calls = [0, 0, 0]
    let fn2Settled
    const fn2Done = new Promise((resolve) => (fn2Settled = resolve))
    let fn1Started
    const started = new Promise((resolve) => (fn1Started = resolve))
    // fn1 holds the key until fn2 has given up (instead of a fixed 1010 ms sleep), so the
    // outcome does not depend on the machine's speed.
    const p1 = locks
      .execute(k, async () => {
        calls[0]++
        fn1Started()
        await fn2Done
        return "fn_1"
      }, { timeout: 1 })
      .catch((e) => e)
    await started
    const p2 = locks.execute(k, async () => (calls[1]++, "fn_2"), { timeout: 1 }).catch((e) => e)
    p2.then(fn2Settled)
    const p3 = locks.execute(k, async () => (calls[2]++, "fn_3"), { timeout: 5 }).catch((e) => e)
    const [r1, r2, r3] = await Promise.all([p1, p2, p3])
    assert.equal(r1, "fn_1")
    assert.ok(r2 instanceof MedusaError)
    assert.equal(r2.type, "conflict")
    assert.equal(r2.message, "Timed-out acquiring lock.")
    assert.equal(r3, "fn_3")
    assert.deepEqual(calls, [1, 0, 1])
  })

  test("R8: the same owner re-enters with awaitQueue", async () => {
    const locks = env.provider()
    const opts = { ownerId: "owner_reentry", expire: 10 }
    await locks.acquire("reentrant_key", opts)
    assert.equal(await locks.acquire("reentrant_key", { ...opts, awaitQueue: true }), undefined)
    assert.equal(await locks.release("reentrant_key", opts), true)
  })

  test("R9: releaseAll is scoped to the given owner", async () => {
    const locks = env.provider()
    await locks.acquire("ra_mine", { ownerId: "owner_a", expire: 10 })
    await locks.acquire("ra_theirs", { ownerId: "owner_b", expire: 10 })
    assert.equal(await locks.releaseAll({ ownerId: "owner_a" }), undefined)
    await locks.acquire("ra_mine", { ownerId: "owner_c" })
    await rejectsConflict(locks.acquire("ra_theirs", { ownerId: "owner_c" }), notAcquired("ra_theirs"))
    assert.equal(await locks.release("ra_mine", { ownerId: "owner_c" }), true)
    assert.equal(await locks.release("ra_theirs", { ownerId: "owner_b" }), true)
  })

  test("R10: no deadlock with opposite key orders (two connections)", async () => {
    const one = env.provider()
    const two = env.provider()
    const take = async (locks, keys, ownerId) => {
      await locks.acquire(keys, { ownerId, expire: 10, awaitQueue: true })
      assert.equal(await locks.release(keys, { ownerId }), true)
    }
    for (let round = 0; round < 5; round++) {
      let timer
      const deadlock = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`round ${round}: opposite orders deadlocked`)), 20000)
      })
      await Promise.race([
        Promise.all([take(one, ["abba_a", "abba_b"], "caller_one"), take(two, ["abba_b", "abba_a"], "caller_two")]),
        deadlock,
      ]).finally(() => clearTimeout(timer))
    }
  })

  test("R11: a failed multi-key acquire rolls back the keys it took", async () => {
    const locks = env.provider()
    await locks.acquire("rb_c", { ownerId: "owner_blocker", expire: 10 })
    await rejectsConflict(locks.acquire(["rb_c", "rb_a"], { ownerId: "owner_caller", expire: 10 }), notAcquired("rb_c"))
    await locks.acquire("rb_a", { ownerId: "owner_other" })
    assert.equal(await locks.release("rb_a", { ownerId: "owner_other" }), true)
  })

  test("R12: a failed acquire keeps the keys the owner already held", async () => {
    const locks = env.provider()
    await locks.acquire("pre_a", { ownerId: "owner_caller", expire: 10 })
    await locks.acquire("pre_z", { ownerId: "owner_blocker", expire: 10 })
    await rejectsConflict(locks.acquire(["pre_z", "pre_a", "pre_m"], { ownerId: "owner_caller", expire: 10 }), notAcquired("pre_z"))
    await locks.acquire("pre_m", { ownerId: "owner_probe" })
    assert.equal(await locks.release("pre_a", { ownerId: "owner_caller" }), true)
  })

  test("R13: anonymous acquisitions are rolled back too", async () => {
    const locks = env.provider()
    await locks.acquire("anon_b", { ownerId: "owner_blocker", expire: 10 })
    await rejectsConflict(locks.acquire(["anon_b", "anon_a"], { expire: 10 }), notAcquired("anon_b"))
    await locks.acquire("anon_a", { ownerId: "owner_probe" })
  })

  test("T1: a timed-out execute gives back the keys it took, not another owner's", async () => {
    const locks = env.provider()
    await locks.acquire("t1_busy", { ownerId: "another-owner", expire: 60 })
    let called = false
    await rejectsConflict(
      locks.execute(["t1_free", "t1_busy"], async () => {
        called = true
      }, { timeout: 1 }),
      "Timed-out acquiring lock."
    )
    assert.equal(await env.raw.get(NS + "t1_free"), null)
    assert.equal(await env.raw.get(NS + "t1_busy"), "another-owner")
    assert.equal(called, false)
    assert.equal(await locks.execute("t1_free", async () => "available"), "available")
  })

  test("M7: execute holds its keys until the job is done", async () => {
    const locks = env.provider()
    const result = await locks.execute("held_key", async () => {
      await rejectsConflict(locks.acquire("held_key", { ownerId: "someone_else" }), notAcquired("held_key"))
      return "done"
    })
    assert.equal(result, "done")
    await locks.acquire("held_key", { ownerId: "someone_else" })
    assert.equal(await locks.release("held_key", { ownerId: "someone_else" }), true)
  })
})

describe("stock argument coercions", () => {
  test("keys may be a string or an array; empty arrays answer at once", async () => {
    const locks = env.provider()
    assert.equal(await locks.acquire([]), undefined)
    assert.equal(await locks.release([]), true)
    let signal
    assert.equal(await locks.execute([], async (s) => ((signal = s), "no keys")), "no keys")
    assert.equal(signal.aborted, false)
    await locks.acquire(["arr_1", "arr_2"], { ownerId: "o" })
    assert.equal(await env.raw.get(NS + "arr_2"), "o")
    assert.equal(await locks.release(["arr_1", "arr_2"], { ownerId: "o" }), true)
    assert.equal(await locks.release(["arr_1"], { ownerId: "o" }), false, "release of a missing key is false")
  })

  test("duplicate keys are taken once (stock blocks or leaks on them)", async () => {
    const locks = env.provider()
    assert.equal(await locks.execute(["dup_k", "dup_k"], async () => "once", { timeout: 5 }), "once")
    await assertReleasedForThisClient(locks, "dup_k")
    await locks.acquire(["dup_a", "dup_a"])
    assert.equal(await env.raw.get(NS + "dup_a"), "*")
    assert.equal(await locks.release(["dup_a", "dup_a"]), true)
  })

  test("acquire's expire: none, truthy values clamped to >= 1 s, fractions rounded up", async () => {
    const locks = env.provider()
    const cases = [
      [undefined, -1],
      [0, -1],
      [null, -1],
      [Number.NaN, -1],
      [10, 10],
      [0.5, 1],
      [-5, 1],
      ["7", 7],
      ["abc", 1],
      [1.5, 2], // stock 2.21.2 fails with a Redis error; the bridge rounds up
    ]
    for (const [i, [expire, want]] of cases.entries()) {
      const key = `ttl_${i}`
      await locks.acquire(key, { ownerId: "ttl", expire })
      const ttl = await env.raw.ttl(NS + key)
      if (want === -1) assert.equal(ttl, -1, `expire ${String(expire)}: no TTL`)
      else assert.ok(ttl > 0 && ttl <= want, `expire ${String(expire)}: TTL ${ttl}, want <= ${want}`)
      if (want > 1) assert.ok(ttl > want - 3, `expire ${String(expire)}: TTL ${ttl}, want about ${want}`)
    }
    await locks.acquire("ttl_reentry", { ownerId: "ttl", expire: 10 })
    await locks.acquire("ttl_reentry", { ownerId: "ttl" })
    assert.equal(await env.raw.ttl(NS + "ttl_reentry"), -1, "a re-acquire without expire clears the TTL, as stock")
  })

  test("owners: null is \"*\", numbers are stringified, \"\" is refused", async () => {
    const locks = env.provider()
    await locks.acquire("own_null", { ownerId: null })
    assert.equal(await env.raw.get(NS + "own_null"), "*")
    assert.equal(await locks.releaseAll(), undefined)
    assert.equal(await env.raw.get(NS + "own_null"), null, "releaseAll() releases \"*\" locks")
    await locks.acquire("own_num", { ownerId: 123 })
    assert.equal(await env.raw.get(NS + "own_num"), "123")
    await locks.releaseAll({ ownerId: 123 })
    assert.equal(await env.raw.get(NS + "own_num"), null)
    await assert.rejects(locks.acquire("own_empty", { ownerId: "" }), (err) => {
      assert.equal(err.type, "invalid_data")
      assert.match(err.message, /ownerId/)
      return true
    })
  })

  test("execute: owner execute:<uuid>, lease TTL from expire, no re-entry", async () => {
    const locks = env.provider()
    const seen = await locks.execute("ex_owner", async () => [await env.raw.get(NS + "ex_owner"), await env.raw.ttl(NS + "ex_owner")])
    assert.match(seen[0], /^execute:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    assert.ok(seen[1] > 50 && seen[1] <= 60, `default lease 60 s, TTL ${seen[1]}`)
    const ttl = await locks.execute("ex_owner", async () => env.raw.ttl(NS + "ex_owner"), { expire: 900 })
    assert.ok(ttl > 890 && ttl <= 900, `expire 900: TTL ${ttl}`)
    // By default execute resolves once its release is sent; this client's next request on the
    // key comes after it (a plain acquire, which fails at once on a held key, gets it), others
    // see the key free a round trip later.
    await assertReleasedForThisClient(locks, "ex_owner")
    // awaitRelease: execute resolves once the bridge released the key, as stock's does.
    const awaiting = env.provider({ awaitRelease: true })
    await awaiting.execute("ex_owner", async () => {})
    assert.equal(await env.raw.get(NS + "ex_owner"), null, "released when execute resolves (awaitRelease)")
    await rejectsConflict(
      locks.execute("ex_nested", () => locks.execute("ex_nested", async () => "inner", { timeout: 1 })),
      "Timed-out acquiring lock."
    )
  })

  test("execute: bad expire rejects before the job runs; NaN timeout means 1 s", async () => {
    const locks = env.provider()
    let called = false
    await assert.rejects(locks.execute("ex_bad", async () => (called = true), { expire: Infinity }), (err) => {
      assert.equal(err.type, "invalid_data")
      return true
    })
    assert.equal(called, false)
    await locks.acquire("ex_nan", { ownerId: "holder", expire: 30 })
    await rejectsConflict(locks.execute("ex_nan", async () => (called = true), { timeout: Number.NaN }), "Timed-out acquiring lock.")
    assert.equal(called, false)
  })

  test("waitLockingTimeout bounds execute when no timeout is given", async () => {
    const locks = env.provider({ waitLockingTimeout: 1 })
    await locks.acquire("wlt_key", { ownerId: "holder", expire: 30 })
    await rejectsConflict(locks.execute("wlt_key", async () => "never"), "Timed-out acquiring lock.")
  })
})

describe("execute's lease", () => {
  test("a lost lease aborts the signal and execute rejects with signal.reason", async () => {
    const locks = env.provider()
    const key = "lease_lost_key"
    let signal
    const err = await locks
      .execute(key, async (s) => {
        signal = s
        // Another owner takes the key over; the next renewal (every max(expire/3, 250 ms)) sees it.
        await env.raw.set(NS + key, "thief")
        await new Promise((resolve) => s.addEventListener("abort", resolve, { once: true }))
        return "ignored"
      }, { expire: 1 })
      .catch((e) => e)
    assert.ok(signal.aborted)
    assert.equal(err, signal.reason)
    assert.ok(err instanceof MedusaError)
    assert.equal(err.type, "conflict")
    assert.equal(
      err.message,
      `Lost the lock for key(s) "${key}" while the job was still running: the lease expired before it could be renewed. Increase "expire" if the job is expected to run this long.`
    )
    assert.equal(await env.raw.get(NS + key), "thief", "the new owner's lock is untouched")
  })

  test("a job without parameters (no signal made for it) still has execute reject with the loss", async () => {
    const locks = env.provider()
    const key = "lease_lost_noargs"
    let args
    const err = await locks
      .execute(key, async () => {
        // Another owner takes the key over; the next renewal sees it while the job still runs.
        await env.raw.set(NS + key, "thief")
        await new Promise((resolve) => setTimeout(resolve, 1500))
        return "ignored"
      }, { expire: 1 })
      .catch((e) => e)
    assert.ok(err instanceof MedusaError)
    assert.equal(err.type, "conflict")
    assert.match(err.message, new RegExp(`^Lost the lock for key\\(s\\) "${key}" while the job was still running`))
    assert.equal(await env.raw.get(NS + key), "thief", "the new owner's lock is untouched")
    // A job that may read its arguments gets them: the signal and the fencing tokens.
    await locks.execute(key + ":2", function () {
      args = [...arguments]
    })
    assert.ok(args[0] instanceof AbortSignal)
    assert.equal(args[0].aborted, false)
    assert.equal(typeof args[1].fencingToken, "number")
  })

  test("a job that rejects after the loss surfaces its own error", async () => {
    const locks = env.provider()
    const key = "lease_lost_reject"
    const own = new Error("job gave up")
    const err = await locks
      .execute(key, async (s) => {
        await env.raw.del(NS + key)
        await new Promise((resolve) => s.addEventListener("abort", resolve, { once: true }))
        throw own
      }, { expire: 1 })
      .catch((e) => e)
    assert.equal(err, own)
  })

  test("the lease is renewed while the job runs", async () => {
    const locks = env.provider()
    const key = "lease_renewed"
    const result = await locks.execute(key, async (signal) => {
      const owner = await env.raw.get(NS + key)
      // expire 1 s: without renewal (every 333 ms) the key would be gone after a second.
      await sleep(2500)
      assert.equal(await env.raw.get(NS + key), owner)
      return signal.aborted
    }, { expire: 1 })
    assert.equal(result, false)
  })
})
