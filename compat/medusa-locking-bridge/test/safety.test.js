"use strict"

// The safety contract under faults: a holder believes it holds a key until its job's signal
// aborts, and no one else may take the key while it still believes; a lost reply never makes
// the client delete another process's lock or leave a lock behind while the call rejects.
// Each test names the defect of the v1 client it covers (the numbering).
//
// The clients go through a fault proxy to the bridge, and the bridge through another to Redis
// (test-support/stack.js); a raw Redis client watches the keys. Order is asserted on
// performance.now(), never durations.

const { describe, test, afterEach } = require("node:test")
const assert = require("node:assert/strict")
const { useBridgeEnv, waitFor, holderRecord, messagesOf } = require("../test-support/env")
const { startStack, watchKey, recordCloses } = require("../test-support/stack")
const { LOCKING_BRIDGE_ERROR } = require("..")
const { PROTOCOL_VERSION } = require("../lib/protocol")

const NS = "medusa_lock:"
let fast // --client-timeout 1s (pings every 250 ms, connection deadline 750 ms after a proof)
const env = useBridgeEnv({
  setup: async (env) => {
    fast = await startStack({ redis: env.redis, args: ["--client-timeout", "1s", "--shutdown-timeout", "3s"] })
    env.onClose(() => fast.stop())
  },
})

afterEach(() => {
  fast?.clientProxy.restore()
  fast?.redisProxy.restore()
})

/** A provider through stack's client proxy, reconnecting quickly, closed at the end of the file. */
function client(stack = fast, options = {}) {
  return env.provider({ url: stack.url, reconnectMinDelayMs: 20, reconnectMaxDelayMs: 200, ...options })
}

/** Starts an execute whose job waits for its signal; resolves {run, signal, abortedAt()} once it runs. */
async function holding(locks, key, args) {
  let started
  const running = new Promise((resolve) => (started = resolve))
  const state = { abortedAt: null }
  state.run = locks
    .execute(key, async (signal) => {
      state.signal = signal
      signal.addEventListener("abort", () => (state.abortedAt = performance.now()), { once: true })
      started()
      await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }))
      return "finished after the loss"
    }, args)
    .catch((e) => e)
  await running
  return state
}

/** Lets the next connections through and cuts the open ones (whose replies were lost). */
function reconnect(stack = fast) {
  stack.clientProxy.restore()
  stack.clientProxy.cut()
}

describe("defect 1: a release whose reply was lost is never sent again", () => {
  test("resume answers replied: the release's own reply is delivered; the other process's lock stays", async () => {
    const a = client()
    const b = env.provider({ url: env.bridge.url }) // another process, same owner name
    const key = "s1_replied"
    await a.acquire(key, { ownerId: "deploy-42" })
    fast.clientProxy.blackhole("down")
    const released = a.release(key, { ownerId: "deploy-42" })
    await waitFor("the release to run", async () => (await env.raw.get(NS + key)) === null)
    await b.acquire(key, { ownerId: "deploy-42", expire: 60 })
    reconnect()
    assert.equal(await released, true)
    assert.equal(await env.raw.get(NS + key), "deploy-42", "a resent release would have deleted b's lock")
    assert.equal(await b.release(key, { ownerId: "deploy-42" }), true)
  })

  test("a bridge that no longer knows the session: the release rejects with outcome_unknown", async () => {
    const a = client()
    const key = "s1_unknown"
    await a.acquire(key, { ownerId: "deploy-42" })
    fast.clientProxy.blackhole("down")
    const released = a.release(key, { ownerId: "deploy-42" }).catch((e) => e)
    await waitFor("the release to run", async () => (await env.raw.get(NS + key)) === null)
    await env.raw.set(NS + key, "deploy-42") // another process with the same owner takes it
    await fast.end("SIGKILL")
    await fast.start()
    reconnect()
    const err = await released
    assert.equal(err.type, LOCKING_BRIDGE_ERROR)
    assert.equal(err.bridgeCode, "outcome_unknown")
    assert.match(err.message, /^locking-bridge: the outcome of the release of key\(s\) "s1_unknown" for owner "deploy-42" is unknown: /)
    assert.match(err.message, /it was not sent again/)
    assert.equal(await env.raw.get(NS + key), "deploy-42")
    await env.raw.del(NS + key)
  })

  test("releaseAll: the same, for every lock of the owner", async () => {
    const a = client()
    await a.acquire("s1_all", { ownerId: "deploy-43" })
    fast.clientProxy.blackhole("down")
    const released = a.releaseAll({ ownerId: "deploy-43" }).catch((e) => e)
    await waitFor("the releaseAll to run", async () => (await env.raw.get(NS + "s1_all")) === null)
    await env.raw.set(NS + "s1_all", "deploy-43")
    await fast.end("SIGKILL")
    await fast.start()
    reconnect()
    const err = await released
    assert.equal(err.bridgeCode, "outcome_unknown")
    assert.match(err.message, /releaseAll of owner "deploy-43" is unknown/)
    assert.equal(await env.raw.get(NS + "s1_all"), "deploy-43")
    await env.raw.del(NS + "s1_all")
  })
})

describe("defect 7: a lost acquire reply never leaves a lock behind a rejected call", () => {
  test("resume answers replied: the acquire succeeds", async () => {
    const a = client()
    const key = "s7_replied"
    await a.ready(20000)
    fast.clientProxy.blackhole("down")
    const acquired = a.acquire(key, { ownerId: "o7" })
    await waitFor("the acquire to run", async () => (await env.raw.get(NS + key)) === "o7")
    reconnect()
    assert.equal(await acquired, undefined)
    assert.equal(await a.release(key, { ownerId: "o7" }), true)
  })

  test("a restarted bridge: settle finds the keys held, the acquire succeeds with its fencing token", async () => {
    const debug = []
    const a = client(fast, { logger: { debug: (m) => debug.push(m) } })
    const key = "s7_settle_held"
    await a.ready(20000)
    fast.clientProxy.blackhole("down")
    const fencing = {}
    const acquired = a.acquire(key, { ownerId: "o7", fencing }) // no expire: a lock left here stays forever
    await waitFor("the acquire to run", async () => (await env.raw.get(NS + key)) === "o7")
    await fast.end("SIGKILL")
    await fast.start()
    reconnect()
    assert.equal(await acquired, fencing)
    // The settled acquire has the token its lost reply carried: the holder record's fence.
    const fence = Number((await holderRecord(env.redis.url, NS, key)).fence)
    assert.ok(fence > 0, `fence ${fence}`)
    assert.deepEqual(fencing, { fencingToken: fence, fencingTokens: { [key]: fence } })
    assert.ok(debug.some((m) => /resumed "acquire" .*: unknown/.test(m)), debug.join("\n"))
    assert.ok(debug.some((m) => /settled "acquire" .*held: true/.test(m)), debug.join("\n"))
    assert.equal(await env.raw.ttl(NS + key), -1)
    assert.equal(await a.release(key, { ownerId: "o7" }), true)
  })

  test("a restarted bridge: settle finds nothing held, the acquire is sent again and fails cleanly", async () => {
    const debug = []
    const a = client(fast, { logger: { debug: (m) => debug.push(m) } })
    await env.raw.set(NS + "s7_busy", "other")
    const before = await fast.bridge.metric("locktui_bridge_requests_total", { op: "acquire" })
    await a.ready(20000)
    fast.clientProxy.blackhole("down")
    const acquired = a.acquire(["s7_free", "s7_busy"], { ownerId: "o7" }).catch((e) => e)
    await waitFor("the acquire to run", async () => (await fast.bridge.metric("locktui_bridge_requests_total", { op: "acquire" })) > before)
    await fast.end("SIGKILL")
    await fast.start()
    reconnect()
    const err = await acquired
    assert.equal(err.type, "conflict")
    assert.equal(err.message, 'Failed to acquire lock for key "s7_busy"')
    assert.ok(debug.some((m) => /settled "acquire" .*held: false/.test(m)), debug.join("\n"))
    assert.equal(await env.raw.get(NS + "s7_free"), null)
    assert.equal(await env.raw.get(NS + "s7_busy"), "other")
    await env.raw.del(NS + "s7_busy")
  })
})

describe("defect 5: the connection's leases end before the bridge can free them", () => {
  // byOurClose: the bridge still hears the client, so it frees the key only when the client's
  // 1000 arrives, a moment after the abort; elsewhere it waits for its client timeout.
  const faults = [
    ["the bridge hears nothing (client to bridge blackholed)", (p) => p.blackhole("up")],
    ["the client hears nothing (bridge to client blackholed)", (p) => p.blackhole("down"), { byOurClose: true }],
    ["a silent link both ways", (p) => p.blackhole("both")],
    ["the bridge's side cut, the client's socket open and silent", (p) => p.cut("server")],
    ["the client's side cut, the bridge's socket open and silent", (p) => p.cut("client")],
  ]
  for (const [name, fault, { byOurClose = false } = {}] of faults) {
    test(`${name}: the signal aborts, then the client closes with 1000, before the key is free`, async () => {
      const locks = client()
      const key = "s5_hb"
      const job = await holding(locks, key)
      const ws = locks.client_.current.socket.ws
      const watch = watchKey(env.raw, NS + key)
      const closes = recordCloses(ws)
      try {
        fault(fast.clientProxy)
        const err = await job.run
        assert.equal(err, job.signal.reason)
        assert.match(err.message, /^Lost the lock for key\(s\) "s5_hb"/)
        const goneAt = await watch.gone
        assert.ok(job.abortedAt < goneAt, `aborted at ${job.abortedAt}, key seen free at ${goneAt}`)
        if (!byOurClose) assert.ok(job.abortedAt <= watch.lastPresentSentAt, `aborted at ${job.abortedAt}, key last seen held at ${watch.lastPresentSentAt}`)
        if (err.cause?.bridgeCode === "heartbeat_timeout") {
          const close = closes.calls[0]
          assert.equal(close?.code, 1000, "the deadline closes the connection with 1000")
          assert.ok(close.at >= job.abortedAt, "1000 (holds none of its leases) is sent only after the abort")
        } else {
          assert.equal(err.cause?.bridgeCode, "connection_lost")
        }
      } finally {
        watch.stop()
        reconnect()
      }
    })
  }

  test("a close handshake the bridge starts is answered only after the leases are lost", async () => {
    // ws echoes the peer's close code; an echoed 1000 would tell the bridge "holds none".
    const { WebSocketServer } = require("ws")
    const server = new WebSocketServer({ host: "127.0.0.1", port: 0, handleProtocols: (protocols) => [...protocols][0] })
    await new Promise((resolve) => server.once("listening", resolve))
    server.on("connection", (ws) => {
      ws.send(JSON.stringify({ type: "welcome", version: PROTOCOL_VERSION, namespace: NS, session: "0123456789abcdef0123456789abcdef", resume_ms: 60000, heartbeat: { interval_ms: 1000, timeout_ms: 4000 }, limits: {} }))
      ws.on("message", (data) => {
        for (const req of messagesOf(data)) {
          if (req.op === "lease") {
            ws.send(JSON.stringify({ id: req.id, ok: true, result: { lease: "L1", owner: "execute:x", valid_ms: 60000 } }))
            setTimeout(() => ws.close(1000), 50)
          } else if (req.op === "ping") ws.send(JSON.stringify({ id: req.id, ok: true, result: { leases: { L1: 60000 } } }))
        }
      })
    })
    const locks = env.provider({ url: `ws://127.0.0.1:${server.address().port}/ws`, reconnectMinDelayMs: 1000 })
    try {
      const job = await holding(locks, "s5_peer_close")
      // When the client's close frame is written (ws's sender, below any wrapper of close()).
      let echoedAt
      const sender = locks.client_.current.socket.ws._sender
      const writeClose = sender.close
      sender.close = function (...args) {
        echoedAt ??= performance.now()
        return writeClose.apply(this, args)
      }
      const err = await job.run
      assert.equal(err.cause?.bridgeCode, "connection_lost")
      await waitFor("the close handshake", () => echoedAt !== undefined)
      assert.ok(job.abortedAt < echoedAt, "the signal aborted before the client answered the close")
    } finally {
      await locks.close()
      await new Promise((resolve) => server.close(resolve))
    }
  })

  test("close() aborts running jobs, then closes with 1000", async () => {
    // A stack of its own with a 12 s client timeout and a 30 s lease: a bridge that took the
    // clean close for a dropped connection would free the key only after 12 s, so "at once"
    // can be waited for with a margin that a loaded machine does not eat.
    const patient = await startStack({ redis: env.redis, args: ["--client-timeout", "12s"] })
    try {
      const locks = client(patient)
      const job = await holding(locks, "s5_close", { expire: 30 })
      const ws = locks.client_.current.socket.ws
      const closes = recordCloses(ws)
      await locks.close()
      const err = await job.run
      assert.equal(err.cause?.bridgeCode, "closed")
      const close = closes.calls[0]
      assert.equal(close?.code, 1000)
      assert.ok(close.at >= job.abortedAt)
      await waitFor("the bridge to free the lease at once", async () => (await env.raw.get(NS + "s5_close")) === null, 5000)
    } finally {
      await patient.stop()
    }
  })
})

describe("defect 4: each lease has a local deadline", () => {
  test("no lease_lost in time (replies slowed, Redis silent): the signal aborts before the key expires", async () => {
    // A 4 s client timeout, so that 600 ms slower replies keep the connection alive.
    const slow = await startStack({ redis: env.redis })
    try {
      const locks = client(slow)
      const key = "s4_deadline"
      slow.clientProxy.delay("down", 600)
      // expire 3: the bridge's own deadline is its last renewal + 2.7 s, Redis expires the key
      // 3 s after it; lease_lost (sent at the bridge's deadline) comes 600 ms late.
      const job = await holding(locks, key, { expire: 3, timeout: 30 })
      const watch = watchKey(env.raw, NS + key)
      slow.redisProxy.blackhole("both")
      const err = await job.run
      assert.equal(err.cause?.bridgeCode, "lease_deadline", `aborted by ${err.cause?.message ?? "the bridge's lease_lost"}`)
      await watch.gone
      assert.ok(job.abortedAt <= watch.lastPresentSentAt, `aborted at ${job.abortedAt}, key last seen held at ${watch.lastPresentSentAt}`)
    } finally {
      await slow.stop()
    }
  })
})

describe("a lease granted too late", () => {
  test("a grant whose reply comes after its own deadline never starts the job", async () => {
    // A 12 s client timeout keeps the connection certain with replies 1.9 s late.
    const slow = await startStack({ redis: env.redis, args: ["--client-timeout", "12s"] })
    try {
      const locks = client(slow)
      const key = "s4_late"
      // expire 2: valid_ms is at most 1.8 s from the send time; every reply comes 1.9 s late.
      slow.clientProxy.delay("down", 1900)
      let ran = false
      const err = await locks.execute(key, async () => (ran = true), { expire: 2, timeout: 3 }).catch((e) => e)
      assert.equal(ran, false, "the job never ran")
      assert.equal(err?.bridgeCode, "lease_too_late", `execute rejects: ${err?.message}`)
      slow.clientProxy.delay("down", 0)
      await waitFor("the late leases given back", async () => (await env.raw.exists(NS + key)) === 0)
    } finally {
      await slow.stop()
    }
  })
})

describe("defect 6: lease_lost", () => {
  test("aborts at once, leaves no entry behind (a --max-leases 1 bridge keeps serving)", async () => {
    const one = await startStack({ redis: env.redis, args: ["--client-timeout", "1s", "--max-leases", "1"] })
    try {
      const locks = client(one)
      const key = "s6_lost"
      for (let i = 0; i < 3; i++) {
        const job = await holding(locks, key, { expire: 2 })
        await env.raw.set(NS + key, "thief")
        const err = await job.run
        assert.equal(err, job.signal.reason)
        assert.equal(err.type, "conflict")
        assert.match(err.message, /^Lost the lock for key\(s\) "s6_lost" while the job was still running/)
        assert.equal(err.cause, undefined, "the bridge's lease_lost, not a local deadline")
        assert.equal(await env.raw.get(NS + key), "thief", "the new owner's lock is untouched")
        assert.equal(locks.client_.current.leases.size, 0)
        await env.raw.del(NS + key)
      }
      assert.equal(await locks.execute(key, async () => "still served"), "still served")
    } finally {
      await one.stop()
    }
  })

  test("the lease's other keys stay held until the signal has aborted, then are freed at once", async () => {
    const locks = client()
    const [lost, kept] = ["s6_multi_lost", "s6_multi_kept"]
    const job = await holding(locks, [lost, kept], { expire: 10 })
    const owner = await env.raw.get(NS + kept)
    let keptAtAbort
    job.signal.addEventListener("abort", () => {
      keptAtAbort = env.raw.get(NS + kept)
    }, { once: true })
    await env.raw.set(NS + lost, "thief")
    await job.run
    assert.equal(await keptAtAbort, owner, "the bridge did not free it before the client was told")
    // Without the client's word the bridge would keep it until the lease's deadline (~6 s or more).
    await waitFor("the other key to be freed", async () => (await env.raw.get(NS + kept)) === null, 1000)
    assert.equal(await env.raw.get(NS + lost), "thief")
    await env.raw.del(NS + lost)
  })
})

describe("going_away and shutting_down", () => {
  test("new work waits for the next bridge; a job that finishes releases its lease as usual", async () => {
    const locks = client(fast, { connectTimeoutMs: 30000 })
    let finish
    let started
    const running = new Promise((resolve) => (started = resolve))
    const first = locks.execute("s_ga_first", async () => {
      started()
      await new Promise((resolve) => (finish = resolve))
      return "first"
    })
    await running
    const exiting = fast.end("SIGTERM")
    await waitFor("going_away", () => !locks.client_.connected)
    let secondAt
    const second = locks.execute("s_ga_second", async () => ((secondAt = performance.now()), "second"), { timeout: 30 })
    finish()
    assert.equal(await first, "first")
    const exit = await exiting
    assert.equal(exit.code, 0, "the bridge drained and exited cleanly")
    await fast.start()
    assert.equal(await second, "second")
    assert.ok(secondAt > exit.at, "the second execute ran on the next bridge, not the draining one")
  })

  test("a job still running at the end of the drain is aborted before the bridge closes", async () => {
    const locks = client()
    const job = await holding(locks, "s_ga_drain")
    const exit = await fast.end("SIGTERM")
    const err = await job.run
    assert.equal(err.cause?.bridgeCode, "shutting_down")
    assert.ok(job.abortedAt < exit.at, "the drain deadline (receipt + drain_ms - margin) came first")
    await fast.start()
  })

  test("a wait ended with shutting_down left nothing behind and is sent again on the next bridge", async () => {
    const locks = client()
    await env.raw.set(NS + "s_sd", "holder")
    const run = locks.execute("s_sd", async () => "ran", { timeout: 30 })
    await waitFor("the lease request", () => locks.client_.inflightCount === 1)
    await fast.end("SIGTERM")
    await fast.start()
    await env.raw.del(NS + "s_sd")
    assert.equal(await run, "ran")
  })
})

describe("other faults: the signal aborts before the key is free", () => {
  test("the bridge killed (SIGKILL) while a job runs", async () => {
    const locks = client()
    const key = "s_kill"
    const job = await holding(locks, key, { expire: 2 })
    const watch = watchKey(env.raw, NS + key)
    await fast.end("SIGKILL")
    const err = await job.run
    assert.equal(err.cause?.bridgeCode, "connection_lost")
    await watch.gone
    assert.ok(job.abortedAt <= watch.lastPresentSentAt)
    await fast.start()
  })

  test("the bridge's Redis link slowed (1.5 s each way) past the lease's deadline", async () => {
    const locks = client()
    const key = "s_slow_redis"
    const job = await holding(locks, key, { expire: 2 })
    const watch = watchKey(env.raw, NS + key)
    fast.redisProxy.delay("both", 1500)
    const err = await job.run
    assert.match(err.message, /^Lost the lock for key\(s\) "s_slow_redis"/)
    await watch.gone
    assert.ok(job.abortedAt <= watch.lastPresentSentAt, `aborted at ${job.abortedAt}, key last seen held at ${watch.lastPresentSentAt}`)
  })
})
