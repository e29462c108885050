"use strict"

// Several bridge URLs: the forms of the "url" option, the order of attempts (the next URL at
// once, the backoff only after a full round of failures), and a failover between two real
// bridges on one Redis when the first is killed: its leases' signals abort at once, the client
// goes on through the second, and the key of the lost lease reaches another client only after
// the holder's signal aborted.

const net = require("node:net")
const { describe, test } = require("node:test")
const assert = require("node:assert/strict")
const { useBridgeEnv, startBridge, startProxy, freePort, waitFor, sleep } = require("../test-support/env")
const { createBridgeLockingProvider } = require("..")
const { Rotation } = require("../lib/rotation")
const { validateOptions } = require("../lib/provider")

const NS = "medusa_lock:"
/** Bridge A, which the failover test kills; env.bridge is B. */
let bridgeA
const env = useBridgeEnv({
  setup: async (env) => {
    bridgeA = await startBridge({ redisUrl: env.redis.url })
    env.onClose(() => bridgeA.stop())
  },
})

/** The URLs a provider's client tries, in order, as its messages show them. */
const urlsOf = (locks) => locks.client_.targets.map((t) => t.display)

describe("the url option", () => {
  test("takes one URL, an array, or URLs separated by commas, in the order given", async () => {
    const one = createBridgeLockingProvider({ url: "ws://127.0.0.1:1" })
    const list = createBridgeLockingProvider({ url: ["http://127.0.0.1:2/bridge", "wss://user:secret@127.0.0.1:3"] })
    const fromEnv = createBridgeLockingProvider({ url: " ws://127.0.0.1:4/ws, ws://127.0.0.1:5/ws ,ws://127.0.0.1:4/ws," })
    try {
      assert.deepEqual(urlsOf(one), ["ws://127.0.0.1:1/ws"])
      assert.deepEqual(urlsOf(list), ["ws://127.0.0.1:2/bridge", "wss://127.0.0.1:3/ws"], "credentials never shown")
      assert.deepEqual(urlsOf(fromEnv), ["ws://127.0.0.1:4/ws", "ws://127.0.0.1:5/ws"], "trimmed, duplicates and empty entries dropped")
    } finally {
      await Promise.all([one.close(), list.close(), fromEnv.close()])
    }
  })

  test("every URL is checked when the client is built, in one line naming the option", () => {
    const cases = [
      [["ws://127.0.0.1:1/ws", "not a url"], 'locking-bridge: URL 2 of the "url" option is not a valid URL (the entry is not shown: it may contain credentials)'],
      ["ws://127.0.0.1:1/ws,ftp://127.0.0.1:2", 'locking-bridge: URL 2 of the "url" option must start with ws://, wss://, http:// or https://, got "ftp://127.0.0.1:2/"'],
      [["ws://127.0.0.1:1/ws", undefined], 'locking-bridge: URL 2 of the "url" option must be a non-empty string, got undefined'],
      [["ws://127.0.0.1:1/ws", { href: "ws://u:p@h/ws" }], 'locking-bridge: URL 2 of the "url" option must be a non-empty string, got an object'],
      ["not\na url", 'locking-bridge: the "url" option is not a valid URL (the entry is not shown: it may contain credentials)'],
      [" , ", 'locking-bridge: the "url" option is required, e.g. "ws://127.0.0.1:7420/ws"'],
      [[], 'locking-bridge: the "url" option is required, e.g. "ws://127.0.0.1:7420/ws"'],
    ]
    for (const [url, message] of cases) {
      assert.throws(() => createBridgeLockingProvider({ url }), (err) => {
        assert.equal(err.message, message)
        assert.doesNotMatch(err.message, /\n/)
        return true
      })
    }
  })
})

describe("credentials in messages", () => {
  // Defect: an entry that did not parse was echoed whole, and query strings (?access_token=…)
  // were shown as given.
  test("URLs show no userinfo and no query values; an unparsable entry is named by its position only", async () => {
    const port = await freePort()
    const secretUrl = `ws://user:s3cret@127.0.0.1:${port}/ws?access_token=s3cret&x=s3cret&s3cret`
    const locks = createBridgeLockingProvider({ url: secretUrl, connectTimeoutMs: 300 })
    try {
      assert.deepEqual(urlsOf(locks), [`ws://127.0.0.1:${port}/ws?access_token=***&x=***&***`])
      const err = await locks.acquire("k").then(() => assert.fail("acquired"), (e) => e)
      assert.equal(err.bridgeCode, "not_connected")
      assert.match(err.message, new RegExp(`no connection to the bridge at ws://127\\.0\\.0\\.1:${port}/ws\\?access_token=\\*\\*\\*&x=\\*\\*\\*&\\*\\*\\* after`))
      assert.doesNotMatch(err.message, /s3cret|user/)
    } finally {
      await locks.close()
    }
    const bad = [
      ["ws://127.0.0.1:1/ws", "ws://user:s3cret@127.0.0.1:notaport/ws"],
      ["ws://127.0.0.1:1/ws", "ftp://user:s3cret@127.0.0.1/x?token=s3cret"],
      "ws://user:s3cret@[::1/ws",
      ["ws://127.0.0.1:1/ws", 12345],
    ]
    for (const url of bad) {
      assert.throws(() => createBridgeLockingProvider({ url }), (err) => {
        assert.match(err.message, /^locking-bridge: (URL 2 of )?the "url" option /)
        assert.doesNotMatch(err.message, /s3cret|user|12345/)
        return true
      })
    }
    assert.throws(() => createBridgeLockingProvider({ url: ["ws://127.0.0.1:1/ws", "ftp://user:s3cret@127.0.0.1/x?token=s3cret"] }), {
      message: 'locking-bridge: URL 2 of the "url" option must start with ws://, wss://, http:// or https://, got "ftp://127.0.0.1/x?token=***"',
    })
  })

  // Defect: a fragment was accepted, and ws then refused the URL at every attempt, forever.
  test("a URL with a fragment is refused in one line naming the option", () => {
    for (const [url, label] of [["ws://127.0.0.1:7420/ws#x", 'the "url" option'], [["ws://127.0.0.1:1/ws", "ws://127.0.0.1:2/ws#"], 'URL 2 of the "url" option']]) {
      assert.throws(() => validateOptions({ url }), {
        message: `locking-bridge: ${label} must not have a fragment (#…): a WebSocket URL cannot carry one`,
      })
    }
  })
})

describe("the order of attempts", () => {
  test("rounds (lib/rotation.js): the next URL at once, the dropped one last, the backoff after a full round", async () => {
    const [a, b, c] = ["A", "B", "C"].map((display) => ({ display }))
    const r = new Rotation([a, b, c])
    const refused = Object.assign(new Error("401"), { fatal: true })
    const down = new Error("ECONNREFUSED")
    assert.equal(r.next(), a)
    assert.deepEqual(r.failed(refused), { atOnce: true, fatal: null })
    assert.equal(r.next(), b)
    r.welcomed()
    assert.deepEqual(await r.firstRound, { welcomed: b, failures: [{ target: a, error: refused }] })
    assert.equal(r.ended(true), true, "a stable connection ended: the next URL at once")
    assert.equal(r.next(), c)
    assert.deepEqual(r.failed(down), { atOnce: true, fatal: null })
    assert.equal(r.next(), a, "then the rest of the round")
    assert.deepEqual(r.failed(refused), { atOnce: true, fatal: null })
    assert.equal(r.next(), b, "the dropped URL comes last, still within the round (a bridge that restarts fast)")
    assert.deepEqual(r.failed(down), { atOnce: false, fatal: refused }, "every URL failed: back off, with the round's fatal error")
    assert.equal(r.next(), a, "the next round starts at the first URL")
    r.welcomed()
    assert.equal(r.ended(false), true, "an unstable connection is a failure of its round")
    assert.equal(r.next(), b)
    assert.equal(r.failed(down).atOnce, true)
    assert.equal(r.next(), c)
    assert.deepEqual(r.failed(down), { atOnce: false, fatal: null })
    const one = new Rotation([a])
    one.next()
    one.welcomed()
    assert.equal(one.ended(true), false, "one URL: every reconnect waits for the backoff")
  })

  test("the next URL at once; after a full round of failures the backoff, then the first URL again", async () => {
    // Two servers that hang up on every connection, recording when each one came.
    const seen = []
    const servers = await Promise.all(
      ["A", "B"].map(async (name) => {
        const server = net.createServer((socket) => {
          seen.push({ name, at: performance.now() })
          socket.destroy()
        })
        await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve))
        return server
      })
    )
    // Backoff: 2000 ms jittered to 1000-2000 ms, so "at once" and "after the backoff" stay apart on a loaded machine.
    const locks = createBridgeLockingProvider({
      url: servers.map((s) => `ws://127.0.0.1:${s.address().port}/ws`),
      reconnectMinDelayMs: 2000,
      reconnectMaxDelayMs: 2000,
    })
    try {
      await waitFor("a second round", () => seen.length >= 3)
      assert.deepEqual(seen.slice(0, 3).map((s) => s.name), ["A", "B", "A"])
      assert.ok(seen[1].at - seen[0].at < 1000, `B was tried ${seen[1].at - seen[0].at} ms after A failed: not at once`)
      assert.ok(seen[2].at - seen[1].at >= 1000, `the next round came ${seen[2].at - seen[1].at} ms after the round failed: no backoff`)
    } finally {
      await locks.close()
      await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))))
    }
  })
})

describe("requests awaiting their outcome across failovers", () => {
  // Defect: a round that ended with a refused token at a standby URL failed the pending settle
  // of an acquire whose reply was lost: the acquire rejected, saying "the client was closed",
  // although nobody closed it and it held its key.
  test("a refused token at a standby keeps a pending settle until a bridge welcomes the client", async () => {
    const fast = ["--client-timeout", "1s"]
    const a = await startBridge({ redisUrl: env.redis.url, args: fast })
    const b = await startBridge({ redisUrl: env.redis.url, args: fast })
    const bad = await startBridge({ redisUrl: env.redis.url, token: "a-token-the-client-lacks" })
    const pa = await startProxy(a.port)
    const pb = await startProxy(b.port)
    env.onClose(async () => {
      await Promise.all([pa.stop(), pb.stop()])
      await Promise.all([a.stop(), b.stop(), bad.stop()])
    })
    const logs = []
    const locks = env.provider({ url: [pa.url, pb.url, bad.url], connectTimeoutMs: 20000, reconnectMinDelayMs: 50, reconnectMaxDelayMs: 300, logger: { warn: (m) => logs.push(m), info: (m) => logs.push(m) } })
    await locks.ready(20000)
    assert.equal(locks.client_.current.display, pa.url)
    await sleep(400) // the connection proves stable
    pa.hold("down") // the acquire runs at bridge A, its reply is lost
    const acquired = locks.acquire("fs_key", { ownerId: "fs_owner" }).then(() => "acquired", (e) => e)
    await waitFor("the acquire at bridge A", async () => (await env.raw.get(NS + "fs_key")) === "fs_owner")
    pa.refuse(true)
    pa.cut("both")
    await waitFor("the failover to bridge B", () => locks.client_.current?.display === pb.url)
    pb.refuse(true)
    pb.cut("both") // A and B unreachable, the third URL refuses the token: the round ends fatal
    await waitFor("the refused token", () => locks.client_.fatal?.bridgeCode === "unauthorized")
    await sleep(2500) // past the settle time (the last frame + 1 s + 1 s)
    pb.refuse(false)
    const result = await Promise.race([acquired, sleep(15000).then(() => "still pending")])
    assert.equal(result, "acquired", result instanceof Error ? `${result.bridgeCode}: ${result.message}` : result)
    assert.equal(locks.client_.closed, false)
    assert.equal(await env.raw.get(NS + "fs_key"), "fs_owner")
    assert.equal(await locks.release("fs_key", { ownerId: "fs_owner" }), true)
  })

  // Defect: the timer of a settle's retry was not tracked: close() left the acquire pending (and
  // the process alive) until that timer fired, up to 4 s later.
  test("close() rejects an acquire whose settle waits for a retry at once", async () => {
    const redisProxy = await startProxy(env.redis.port)
    const redisUrl = `redis://127.0.0.1:${redisProxy.port}`
    const fast = ["--client-timeout", "1s"]
    const a = await startBridge({ redisUrl, args: fast })
    const b = await startBridge({ redisUrl, args: fast })
    const pa = await startProxy(a.port)
    env.onClose(async () => {
      await pa.stop()
      await Promise.all([a.stop(), b.stop()])
      await redisProxy.stop()
    })
    // connectTimeoutMs: the acquire's own limit (with the settle window) stays far away.
    const locks = createBridgeLockingProvider({ url: [pa.url, b.url], connectTimeoutMs: 60000, reconnectMinDelayMs: 50, reconnectMaxDelayMs: 300 })
    await locks.ready(20000)
    redisProxy.hold("up") // the acquire stalls at bridge A
    const acquired = locks.acquire("fs_retry", { ownerId: "o" }).then(() => "acquired", (e) => ({ err: e, at: performance.now() }))
    await waitFor("the acquire in flight", () => locks.client_.inflightCount === 1)
    pa.refuse(true)
    pa.cut("both") // failover to B, which does not know A's session: the acquire is settled there
    redisProxy.refuse(true)
    redisProxy.cut("both") // and Redis is gone: B's settles fail (outcome_unknown), the next retry waits 1 s
    await waitFor("two failed settles at bridge B", async () => (await b.metric("locktui_bridge_requests_total", { op: "settle", result: "outcome_unknown" })) >= 2, 30000)
    const closedAt = performance.now()
    await locks.close()
    const r = await Promise.race([acquired, sleep(2000).then(() => "still pending")])
    assert.notEqual(r, "still pending", "the acquire was still pending 2 s after close()")
    assert.equal(r.err?.bridgeCode, "outcome_unknown", String(r.err?.message))
    assert.match(r.err.message, /is unknown: the client was closed before the bridge could tell it/)
    assert.equal(r.err.cause?.bridgeCode, "closed")
    assert.ok(r.at - closedAt < 200, `the acquire rejected ${Math.round(r.at - closedAt)} ms after close()`)
    assert.equal(locks.client_.requests.pending, false)
  })
})

describe("bridges of another lock domain", () => {
  // Defect: a standby with another --namespace welcomed the client like any other bridge: after a
  // failover, its locks no longer excluded those taken through the first bridge.
  test("a welcome from a bridge of another namespace is refused as fatal, naming both URLs and namespaces", async () => {
    const first = await startBridge({ redisUrl: env.redis.url })
    const elsewhere = await startBridge({ redisUrl: env.redis.url, namespace: "other_lock:" })
    env.onClose(() => Promise.all([first.stop(), elsewhere.stop()]))
    const locks = env.provider({ url: [first.url, elsewhere.url], connectTimeoutMs: 20000, reconnectMinDelayMs: 50, reconnectMaxDelayMs: 200 })
    await locks.ready(20000)
    await first.kill()
    const err = await locks.acquire("nd_key", { ownerId: "o" }).then(() => assert.fail("acquired through a bridge of another namespace"), (e) => e)
    assert.equal(err.type, "locking_bridge_error")
    assert.equal(err.bridgeCode, "namespace_mismatch")
    const q = (u) => u.replace(/[./]/g, "\\$&")
    assert.match(err.message, new RegExp(`^locking-bridge: the bridge at ${q(elsewhere.url)} serves the lock namespace "other_lock:", but the bridge at ${q(first.url)} serves "medusa_lock:".*"url" option`))
    assert.doesNotMatch(err.message, /\n/)
    assert.equal(await env.raw.get("other_lock:nd_key"), null)
  })
})

describe("failover between two bridges on one Redis", () => {
  test("bridge A killed: the lease's signal aborts, calls go through B, and B gives the key away only after the abort", async () => {
    const logs = []
    const logger = { info: (m) => logs.push(m), warn: (m) => logs.push(m) }
    // Reconnect delays of 30 s or more: only a failover at once lets the calls below through B
    // within their connectTimeoutMs (3 s).
    const holder = env.provider({ url: [bridgeA.url, env.bridge.url], reconnectMinDelayMs: 30000, reconnectMaxDelayMs: 60000, logger })
    const other = env.provider({ url: env.bridge.url })
    const key = "fo_key"

    let started
    const running = new Promise((resolve) => (started = resolve))
    const held = { abortedAt: null, valueAtAbort: null }
    const run = holder
      .execute(key, async (signal) => {
        held.signal = signal
        signal.addEventListener("abort", () => {
          held.abortedAt = performance.now()
          held.valueAtAbort = env.raw.get(NS + key) // sent now, while the signal has just aborted
        }, { once: true })
        started()
        await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }))
        return "finished after the loss"
      }, { expire: 2 })
      .catch((e) => e)
    await running
    assert.equal(holder.client_.current.display, bridgeA.url, "the first URL that works")
    const owner = await env.raw.get(NS + key)
    assert.match(owner, /^execute:/)

    // Another client waits for the key through B.
    let gotAt
    const waiting = other.execute(key, async () => ((gotAt = performance.now()), "got it"), { timeout: 60 })
    await waitFor("the other client's lease request", () => other.client_.inflightCount === 1)

    await bridgeA.kill() // SIGKILL
    const err = await run
    assert.equal(err, held.signal.reason)
    assert.equal(err.type, "conflict")
    assert.match(err.message, /^Lost the lock for key\(s\) "fo_key"/)
    assert.equal(err.cause?.bridgeCode, "connection_lost")
    assert.match(err.cause?.message, new RegExp(`the bridge at ${bridgeA.url.replace(/[./]/g, "\\$&")}`))
    assert.equal(await held.valueAtAbort, owner, "the key was still the holder's when its signal aborted")

    // The holder goes on through B at once.
    await holder.acquire("fo_other", { ownerId: "o" })
    assert.equal(holder.client_.current.display, env.bridge.url)
    assert.equal(await holder.release("fo_other", { ownerId: "o" }), true)
    assert.ok(logs.some((m) => m.startsWith(`locking-bridge: lost the connection to the bridge at ${bridgeA.url}:`)), logs.join("\n"))
    assert.ok(logs.some((m) => m.startsWith(`locking-bridge: connected to the bridge at ${env.bridge.url}`)), logs.join("\n"))

    // The dead bridge released nothing: the key waits for its TTL, then goes to the other client.
    assert.equal(await waiting, "got it")
    assert.ok(held.abortedAt < gotAt, `the holder was told at ${held.abortedAt}, the other client got the key at ${gotAt}`)
  })
})
