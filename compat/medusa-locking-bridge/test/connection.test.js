"use strict"

// Connection life: dropped connections (through a fault proxy in front of the bridge), calls made
// while disconnected, close(), and token authentication. The bridge runs with a 1 s client
// timeout, so a silent connection is noticed within a second.

const { spawn } = require("node:child_process")
const path = require("node:path")
const readline = require("node:readline")
const { describe, test, before, after } = require("node:test")
const assert = require("node:assert/strict")
const { useBridgeEnv, startProxy, startBridge, freePort, waitFor, sleep } = require("../test-support/env")
const { createBridgeLockingProvider, LOCKING_BRIDGE_ERROR } = require("..")
const { PROTOCOL_VERSION } = require("../lib/protocol")

const NS = "medusa_lock:"
let proxy
const env = useBridgeEnv({
  bridgeOptions: { args: ["--client-timeout", "1s"] },
  setup: async (env) => {
    proxy = await startProxy(env.bridge.port)
    env.onClose(() => proxy.stop())
  },
})

/** A provider through the proxy, closed at the end of the file. */
function proxied(options = {}) {
  return env.provider({ url: proxy.url, reconnectMinDelayMs: 20, reconnectMaxDelayMs: 200, ...options })
}

/** Waits until the provider has n requests in flight on its connections. */
const inFlight = (locks, n) => waitFor(`${n} request(s) in flight`, () => locks.client_.inflightCount === n)

/** promise, or a failure naming what when it is still pending after ms. */
function within(ms, promise, what) {
  let timer
  const late = new Promise((resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} still pending after ${ms} ms`)), ms)
  })
  return Promise.race([promise, late]).finally(() => clearTimeout(timer))
}

/** Cuts the open connections and lets the next ones through. */
function cutAndRestore() {
  proxy.restore()
  proxy.cut()
}

describe("a dropped connection", () => {
  test("aborts running jobs with \"Lost the lock\"; the bridge releases their keys; the client reconnects", async () => {
    const locks = proxied()
    const key = "cd_job"
    let signal
    let started
    const jobStarted = new Promise((resolve) => (started = resolve))
    const run = locks
      .execute(key, async (s) => {
        signal = s
        started()
        await new Promise((resolve) => s.addEventListener("abort", resolve, { once: true }))
        return "finished after the loss"
      })
      .catch((e) => e)
    await jobStarted
    assert.match(await env.raw.get(NS + key), /^execute:/)
    proxy.cut()
    const err = await run
    assert.equal(err, signal.reason)
    assert.equal(err.type, "conflict")
    assert.match(err.message, /^Lost the lock for key\(s\) "cd_job" while the job was still running/)
    assert.equal(err.cause?.bridgeCode, "connection_lost")
    await waitFor("the bridge to release the dropped connection's lease", async () => (await env.raw.get(NS + key)) === null)
    await locks.acquire(key, { ownerId: "after" })
    assert.equal(await locks.release(key, { ownerId: "after" }), true)
  })

  test("an acquire waiting in the queue is resumed as cancelled and sent again", async () => {
    const debug = []
    const locks = proxied({ logger: { debug: (m) => debug.push(m) } })
    await env.raw.set(NS + "cd_wait", "holder")
    const waiting = locks.acquire("cd_wait", { ownerId: "waiter", awaitQueue: true })
    await inFlight(locks, 1)
    proxy.cut()
    await waitFor("the resume", () => debug.some((m) => /"acquire" .*: cancelled/.test(m)))
    await env.raw.del(NS + "cd_wait")
    assert.equal(await waiting, undefined)
    assert.equal(await env.raw.get(NS + "cd_wait"), "waiter")
    assert.equal(await locks.release("cd_wait", { ownerId: "waiter" }), true)
  })

  test("requests that never reached the bridge are resumed as not_received and sent again", async () => {
    const debug = []
    const locks = proxied({ logger: { debug: (m) => debug.push(m) } })
    // Owners of their own: the bridge runs the three requests concurrently, in any order.
    await locks.acquire("cd_rel", { ownerId: "o1" })
    await locks.acquire("cd_rel_all", { ownerId: "o2" })
    proxy.blackhole("up")
    const acquired = locks.acquire("cd_acq", { ownerId: "o3" })
    const released = locks.release("cd_rel", { ownerId: "o1" })
    const releasedAll = locks.releaseAll({ ownerId: "o2" })
    await inFlight(locks, 3)
    cutAndRestore()
    assert.equal(await acquired, undefined)
    assert.equal(await released, true)
    assert.equal(await releasedAll, undefined)
    assert.equal(debug.filter((m) => /: not_received/.test(m)).length, 3, debug.join("\n"))
    assert.equal(await env.raw.get(NS + "cd_rel_all"), null)
    assert.equal(await locks.release("cd_acq", { ownerId: "o3" }), true)
  })

  test("sends a lease request again, within execute's timeout", async () => {
    const locks = proxied()
    await locks.ready(20000)
    proxy.blackhole("up")
    const run = locks.execute("cd_lease_retry", async () => "ran", { timeout: 30 })
    await inFlight(locks, 1)
    cutAndRestore()
    assert.equal(await run, "ran")
  })
})

describe("a request cut off while no bridge answers", () => {
  // Defect: the requests in flight when the connection dropped waited for a resume on the next
  // connection with no limit at all: with no bridge answering they never settled.
  test("settles within its own limit counted from the drop: execute at its timeout, release at connectTimeoutMs, acquire at connectTimeoutMs plus the settle window", async () => {
    const own = await startProxy(env.bridge.port)
    env.onClose(() => own.stop())
    const down = `ws://127.0.0.1:${await freePort()}/ws`
    const other = env.provider()
    await other.acquire("co_exec", { ownerId: "other", expire: 60 })
    const locks = env.provider({ url: [own.url, down], connectTimeoutMs: 500, reconnectMinDelayMs: 100, reconnectMaxDelayMs: 400 })
    await locks.ready(20000)
    const outcome = (p) => p.then((v) => ({ value: v, at: performance.now() }), (err) => ({ err, at: performance.now() }))
    const executed = outcome(locks.execute("co_exec", async () => "never", { timeout: 2 }))
    const executeStarted = performance.now()
    await inFlight(locks, 1)
    own.hold("up") // the release and the acquire never reach the bridge
    const released = outcome(locks.release("co_rel", { ownerId: "o" }))
    const acquired = outcome(locks.acquire("co_acq", { ownerId: "o" }))
    await inFlight(locks, 3)
    own.refuse(true)
    own.cut("both")
    const droppedAt = performance.now()
    const limit = (p, what) => within(15000, p, what)

    const rel = await limit(released, "the release")
    assert.equal(rel.err?.bridgeCode, "outcome_unknown", String(rel.err?.message))
    assert.match(rel.err.message, /^locking-bridge: the outcome of the release of key\(s\) "co_rel" for owner "o" is unknown: the connection to the bridge at \S+ ended before the reply, and no bridge told its outcome within \d+ ms/)
    assert.ok(rel.at - droppedAt >= 450 && rel.at - droppedAt < 2500, `the release settled ${rel.at - droppedAt} ms after the drop (connectTimeoutMs 500)`)

    const exe = await limit(executed, "execute")
    assert.equal(exe.err?.bridgeCode, "connection_lost", String(exe.err?.message))
    assert.match(exe.err.message, /ended while "lease" was in flight and execute's timeout has passed; nothing is held$/)
    assert.ok(exe.at - executeStarted >= 1950 && exe.at - executeStarted < 4000, `execute settled ${exe.at - executeStarted} ms after it began (timeout 2 s)`)

    // The settle window: the old connection's last frame + the bridge's client timeout (1 s) + 1 s.
    const acq = await limit(acquired, "the acquire")
    assert.equal(acq.err?.bridgeCode, "outcome_unknown", String(acq.err?.message))
    assert.match(acq.err.message, /^locking-bridge: the outcome of the acquire of key\(s\) "co_acq" for owner "o" is unknown: /)
    assert.ok(acq.at - droppedAt >= 1500 && acq.at - droppedAt < 6000, `the acquire settled ${acq.at - droppedAt} ms after the drop (500 ms + a settle window of about 2 s)`)
    assert.equal(locks.client_.requests.pending, false, "nothing awaits an outcome any more")

    // Once a bridge answers again, none of them is sent again.
    own.restore()
    own.refuse(false)
    await locks.ready(20000)
    await sleep(300)
    assert.equal(await env.raw.get(NS + "co_acq"), null)
    assert.equal(await other.release("co_exec", { ownerId: "other" }), true)
  })
})

describe("a request larger than the bridge's limits", () => {
  // Defect: a frame over max_frame_bytes was sent: the bridge closed the whole connection (1009),
  // every lease on it was lost, and the request was sent again on the next connection.
  test("fails alone with invalid_data naming the limit; the connection and its leases stay", async () => {
    const logs = []
    const locks = proxied({ logger: { warn: (m) => logs.push(m), info: () => {} } })
    await locks.ready(20000)
    const link = locks.client_.current
    const limits = link.welcome.limits
    let started
    const jobStarted = new Promise((resolve) => (started = resolve))
    let release
    const running = locks.execute("co_innocent", async (signal) => {
      started()
      await new Promise((resolve) => (release = resolve))
      return signal.aborted ? "aborted" : "held throughout"
    }, { expire: 30 })
    await jobStarted

    await assert.rejects(within(10000, locks.acquire("x".repeat(limits.max_frame_bytes), { ownerId: "o" }), "the oversized acquire"), (err) => {
      assert.equal(err.type, "invalid_data")
      assert.equal(err.bridgeCode, "frame_too_large")
      assert.match(err.message, new RegExp(`^locking-bridge: the "acquire" request is \\d+ bytes of JSON, more than the bridge at \\S+ accepts \\(max_frame_bytes ${limits.max_frame_bytes}\\): use fewer or shorter keys, or a shorter ownerId; nothing was sent$`))
      return true
    })
    await assert.rejects(within(10000, locks.execute(["y".repeat(limits.max_frame_bytes)], async () => "never"), "the oversized execute"), { type: "invalid_data", bridgeCode: "frame_too_large" })
    const many = Array.from({ length: limits.max_keys + 1 }, (_, i) => `co_k${i}`)
    await assert.rejects(within(10000, locks.release(many, { ownerId: "o" }), "the release of too many keys"), (err) => {
      assert.equal(err.type, "invalid_data")
      assert.equal(err.bridgeCode, "too_many_keys")
      assert.match(err.message, new RegExp(`^locking-bridge: the "release" request names ${many.length} keys, more than the bridge at \\S+ accepts \\(max_keys ${limits.max_keys}\\); nothing was sent$`))
      return true
    })
    assert.equal(locks.client_.current, link, "the same connection")
    release()
    assert.equal(await running, "held throughout")
    assert.deepEqual(logs.filter((m) => /lost the connection|Lost the lock/.test(m)), [])
  })
})

describe("a process whose only work is a request awaiting its outcome", () => {
  // Defect: after a one-sided cut (the client's socket closed, the bridge's still open) the
  // lease request waits, orphaned, for a resume on the next connection, and the reconnect timer
  // was unref'd because the queue, the ready() waiters and the settles were empty: Node exited
  // with execute's promise never settled.
  test("stays alive through repeated one-sided cuts until the request settles", async () => {
    const key = "cd_alive"
    await env.raw.set(NS + key, "holder")
    const child = spawn(process.execPath, [path.join(__dirname, "..", "test-support", "execute-child.js"), proxy.url, key], {
      stdio: ["ignore", "pipe", "inherit"],
    })
    const lines = []
    let waits = 0
    readline.createInterface({ input: child.stdout }).on("line", (line) => {
      lines.push(line)
      if (line === "waiting") waits++
    })
    const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)))
    // Waits for pred, failing at once if the child exits first.
    const until = (what, pred) =>
      Promise.race([
        waitFor(what, pred),
        exited.then((code) => {
          if (!pred()) throw new Error(`the child exited (code ${code}) before ${what}: ${lines.join(" | ")}`)
        }),
      ])
    try {
      for (let cut = 1; cut <= 3; cut++) {
        await until(`the lease request in flight (${cut})`, () => waits >= cut)
        proxy.cut("client")
      }
      await until("the lease request in flight after the last cut", () => waits >= 4)
      await env.raw.del(NS + key)
      assert.equal(await exited, 0, lines.join(" | "))
    } finally {
      child.kill("SIGKILL") // a no-op once it exited
    }
    assert.deepEqual(lines.filter((l) => l !== "waiting"), ["settled ran"])
  })

  test("an idle client whose connection is cut does not keep the process alive", async () => {
    const child = spawn(process.execPath, [path.join(__dirname, "..", "test-support", "execute-child.js"), proxy.url], {
      stdio: ["ignore", "pipe", "inherit"],
    })
    const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)))
    try {
      const connected = new Promise((resolve) => readline.createInterface({ input: child.stdout }).on("line", (l) => l === "connected" && resolve()))
      await Promise.race([connected, exited.then((code) => assert.fail(`the child exited (code ${code}) before it connected`))])
      proxy.cut("client")
      assert.equal(await exited, 0, "the process exits by itself: nothing waits for a reconnect")
    } finally {
      child.kill("SIGKILL") // a no-op once it exited
    }
  })
})

describe("heartbeats", () => {
  test("a silent connection is closed by its deadline and replaced; its jobs' signals abort", async () => {
    const locks = proxied()
    let started
    const jobStarted = new Promise((resolve) => (started = resolve))
    const run = locks
      .execute("cd_silent", async (signal) => {
        started()
        await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }))
        return "late"
      })
      .catch((e) => e)
    await jobStarted
    proxy.blackhole("both")
    const err = await run
    assert.match(err.message, /^Lost the lock for key\(s\) "cd_silent"/)
    assert.equal(err.cause?.bridgeCode, "heartbeat_timeout")
    assert.match(err.cause?.message, /answered nothing sent in the last \d+ ms \(its client timeout is 1000 ms\)/)
    cutAndRestore()
    await locks.acquire("cd_silent_after", { ownerId: "o" })
    assert.equal(await locks.release("cd_silent_after", { ownerId: "o" }), true)
  })

  test("a heartbeatIntervalMs the bridge's timeout cannot work with is refused in one line", async () => {
    // timeout 1000 ms, margin 250 ms: at most (1000 - 250) / 2 = 375 ms.
    const locks = proxied({ heartbeatIntervalMs: 376 })
    await assert.rejects(locks.ready(20000), (err) => {
      assert.equal(err.bridgeCode, "heartbeat_interval")
      assert.equal(err.type, LOCKING_BRIDGE_ERROR)
      assert.match(err.message, /^locking-bridge: heartbeatIntervalMs 376 is too long for the bridge at .*: its client timeout is 1000 ms, so the client must ping at least every 375 ms/)
      assert.doesNotMatch(err.message, /\n/)
      return true
    })
    await assert.rejects(locks.acquire("cd_hb"), { bridgeCode: "heartbeat_interval" })
    const ok = proxied({ heartbeatIntervalMs: 375 })
    await ok.acquire("cd_hb", { ownerId: "o" })
    assert.equal(await ok.release("cd_hb", { ownerId: "o" }), true)
  })
})

describe("calls made while disconnected", () => {
  test("wait for the connection (acquire up to connectTimeoutMs, execute up to its timeout)", async () => {
    const locks = proxied({ connectTimeoutMs: 30000 })
    await locks.ready(20000)
    proxy.refuse(true)
    proxy.cut()
    await waitFor("the client to notice", () => !locks.client_.connected)
    const acquired = locks.acquire("cd_during", { ownerId: "o" })
    const executed = locks.execute("cd_during_exec", async () => "ran", { timeout: 30 })
    await sleep(200)
    proxy.refuse(false)
    assert.equal(await acquired, undefined)
    assert.equal(await executed, "ran")
    assert.equal(await env.raw.get(NS + "cd_during"), "o")
  })

  test("fail after their wait with a clear error when the bridge is unreachable", async () => {
    const port = await freePort()
    const locks = env.provider({ url: `ws://127.0.0.1:${port}/ws`, connectTimeoutMs: 300, reconnectMaxDelayMs: 100 })
    const check = (err) => {
      assert.equal(err.type, LOCKING_BRIDGE_ERROR)
      assert.equal(err.bridgeCode, "not_connected")
      assert.match(err.message, new RegExp(`no connection to the bridge at ws://127\\.0\\.0\\.1:${port}/ws after waiting \\d+ ms: .*ECONNREFUSED`))
      return true
    }
    await assert.rejects(locks.acquire("k"), check)
    await assert.rejects(locks.release("k"), check)
    await assert.rejects(locks.releaseAll(), check)
    await assert.rejects(locks.execute("k", async () => "never", { timeout: 1 }), check)
  })
})

describe("close()", () => {
  test("rejects pending calls, aborts running jobs and stops reconnecting", async () => {
    // A proxy of its own: the file's other clients reconnect through the shared one at any time.
    const own = await startProxy(env.bridge.port)
    env.onClose(() => own.stop())
    const locks = createBridgeLockingProvider({ url: own.url, reconnectMinDelayMs: 20, reconnectMaxDelayMs: 100 })
    await locks.acquire("cd_close", { ownerId: "holder", expire: 30 })
    const waiting = locks.acquire("cd_close", { ownerId: "waiter", awaitQueue: true }).catch((e) => e)
    let started
    const jobStarted = new Promise((resolve) => (started = resolve))
    const running = locks
      .execute("cd_close_job", async (signal) => {
        started()
        await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }))
        return "late"
      })
      .catch((e) => e)
    await jobStarted
    await inFlight(locks, 1)
    assert.equal(own.connections(), 1)
    const accepted = own.accepted
    await locks.close()
    const err = await waiting
    assert.equal(err.bridgeCode, "outcome_unknown", "the acquire was in flight: it may have run")
    assert.match(err.message, /^locking-bridge: the outcome of the acquire of key\(s\) "cd_close" for owner "waiter" is unknown: the client was closed/)
    assert.equal(err.cause?.bridgeCode, "closed")
    const lost = await running
    assert.match(lost.message, /^Lost the lock for key\(s\) "cd_close_job"/)
    assert.equal(lost.cause?.bridgeCode, "closed")
    await assert.rejects(locks.acquire("other"), { bridgeCode: "closed" })
    await waitFor("the connection to close", () => own.connections() === 0)
    await sleep(300) // three times the longest reconnect delay
    assert.equal(own.accepted, accepted, "no reconnect after close()")
    await waitFor("the bridge to release the closed connection's lease", async () => (await env.raw.get(NS + "cd_close_job")) === null)
    await env.raw.del(NS + "cd_close")
  })

  test("rejects calls waiting for a connection", async () => {
    const port = await freePort()
    const locks = createBridgeLockingProvider({ url: `ws://127.0.0.1:${port}`, reconnectMaxDelayMs: 100 })
    const forever = locks.acquire("k", { awaitQueue: true }).catch((e) => e)
    await sleep(200)
    await locks.close()
    assert.equal((await forever).bridgeCode, "closed")
  })
})

describe("token authentication", () => {
  let secured
  before(async () => {
    secured = await startBridge({ redisUrl: env.redis.url, token: "s3cret-token,app-token;owner=app-,keys-token;keys=app:" })
  })
  after(async () => {
    await secured?.stop()
  })

  test("a wrong or missing token fails fast with a clear error", async () => {
    const wrong = env.provider({ url: secured.url, token: "wrong-token", connectTimeoutMs: 60000 })
    await assert.rejects(wrong.acquire("auth_key"), (err) => {
      assert.equal(err.type, LOCKING_BRIDGE_ERROR)
      assert.equal(err.bridgeCode, "unauthorized")
      assert.match(err.message, /^locking-bridge: the bridge at ws:\/\/127\.0\.0\.1:\d+\/ws refused the token \(HTTP 401[^)]*\)+; check the "token" option$/)
      assert.doesNotMatch(err.message, /wrong-token|\n/)
      return true
    })
    await assert.rejects(wrong.ready(60000), { bridgeCode: "unauthorized" })
    const missing = env.provider({ url: secured.url, connectTimeoutMs: 60000 })
    await assert.rejects(missing.execute("auth_key", async () => "never", { timeout: 60 }), /the bridge at \S+ requires a token \(HTTP 401.*; set the "token" option$/)
  })

  test("the right token works", async () => {
    const locks = env.provider({ url: secured.url, token: "s3cret-token" })
    await locks.acquire("auth_key", { ownerId: "o" })
    assert.equal(await locks.release("auth_key", { ownerId: "o" }), true)
  })

  test("a token restricted to an owner prefix refuses other owners", async () => {
    const locks = env.provider({ url: secured.url, token: "app-token" })
    await assert.rejects(locks.acquire("auth_prefixed", { ownerId: "someone" }), (err) => {
      assert.equal(err.type, LOCKING_BRIDGE_ERROR)
      assert.equal(err.bridgeCode, "owner_forbidden")
      return true
    })
    await locks.acquire("auth_prefixed", { ownerId: "app-1" })
    assert.equal(await locks.release("auth_prefixed", { ownerId: "app-1" }), true)
    assert.equal(await locks.execute("auth_prefixed", async () => "leases are allowed"), "leases are allowed")
  })

  test("a token restricted to a key prefix refuses other keys (key_forbidden)", async () => {
    const locks = env.provider({ url: secured.url, token: "keys-token" })
    for (const call of [() => locks.acquire("elsewhere", { ownerId: "o" }), () => locks.execute(["app:1", "elsewhere"], async () => "never")]) {
      await assert.rejects(call(), (err) => {
        assert.equal(err.type, LOCKING_BRIDGE_ERROR)
        assert.equal(err.bridgeCode, "key_forbidden")
        return true
      })
    }
    assert.equal(await locks.execute("app:1", async () => "allowed"), "allowed")
  })
})

describe("a bridge that welcomes and drops at once", () => {
  test("is not hammered: the reconnect backoff keeps growing until a connection proves stable", async () => {
    const { WebSocketServer } = require("ws")
    const port = await freePort()
    let connections = 0
    const server = new WebSocketServer({ host: "127.0.0.1", port, handleProtocols: (protocols) => [...protocols][0] })
    server.on("connection", (ws) => {
      connections++
      ws.send(JSON.stringify({ type: "welcome", version: PROTOCOL_VERSION, namespace: NS, session: "0123456789abcdef0123456789abcdef", resume_ms: 60000, heartbeat: { interval_ms: 1000, timeout_ms: 4000 }, limits: { max_in_flight: 8 } }))
      ws.close(1001, "going away")
    })
    const locks = createBridgeLockingProvider({ url: `ws://127.0.0.1:${port}/ws`, reconnectMinDelayMs: 20, reconnectMaxDelayMs: 400 })
    try {
      await waitFor("a first connection", () => connections >= 1)
      await sleep(1200)
      // Backing off 20, 40, 80, 160, 320, 400… ms gives well under 15 connections in 1.2 s;
      // resetting on every welcome reconnected every 10-20 ms (60 or more).
      assert.ok(connections < 15, `${connections} connections in 1.2 s: the backoff was reset by each welcome`)
    } finally {
      await locks.close()
      await new Promise((resolve) => server.close(resolve))
    }
  })
})
