"use strict"

// The contract between this client and the bridge, from the Node side (the Go side's test,
// bridge/vocabulary_test.go, fails when lib/protocol.json differs from the bridge's constants):
//
// * lib/ takes every protocol name from lib/protocol.json: no file spells one itself, and every
//   name it reads there exists;
// * the bridge speaks that vocabulary: the welcome, the subprotocol, the ops, the error codes;
// * the client follows the rules each welcome announces (margin, max_seconds, the empty owner,
//   max_in_flight) rather than its own, and the fallbacks only with a bridge that announces none.

const fs = require("node:fs")
const path = require("node:path")
const { describe, test } = require("node:test")
const assert = require("node:assert/strict")
const WebSocket = require("ws")
const { useBridgeEnv, requireCompat, packageDir, messagesOf } = require("../test-support/env")
const { createBridgeLockingProvider } = require("..")
const protocol = require("../lib/protocol")
const spec = require("../lib/protocol.json")

const { Ops, Events, Codes, ResumeStates, FALLBACKS, SUBPROTOCOL, PROTOCOL_VERSION, CLIENT_HEADER, rulesOf, rulesProblem } = protocol
const NS = "medusa_lock:"
const SESSION = "0123456789abcdef0123456789abcdef"

const env = useBridgeEnv()

// --- lib/ reads the protocol from one file -------------------------------------------------------

/** The JavaScript files of the package that run (index.js and lib/). */
function sourceFiles() {
  const lib = path.join(packageDir, "lib")
  return [path.join(packageDir, "index.js"), ...fs.readdirSync(lib).filter((f) => f.endsWith(".js")).map((f) => path.join(lib, f))]
}

/** Calls visit(node, sourceFile) for every node of file, parsed by TypeScript as JavaScript. */
function walk(file, visit) {
  const ts = requireCompat("typescript")
  const source = ts.createSourceFile(file, fs.readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true, ts.ScriptKind.JS)
  const go = (node) => {
    visit(node, source, ts)
    ts.forEachChild(node, go)
  }
  go(source)
}

const where = (node, source) => `${path.relative(packageDir, source.fileName)}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`

describe("lib/ and lib/protocol.json", () => {
  test("no file spells a protocol name or a fallback itself", () => {
    const names = new Map()
    for (const [kind, name, map] of [["op", "Ops", Ops], ["event", "Events", Events], ["code", "Codes", Codes], ["resume state", "ResumeStates", ResumeStates]]) {
      for (const [key, value] of Object.entries(map)) names.set(value, `the ${kind} ${name}.${key}`)
    }
    names.set(SUBPROTOCOL, "SUBPROTOCOL")
    names.set(CLIENT_HEADER, "CLIENT_HEADER")
    const numbers = new Map([[FALLBACKS.max_seconds, "FALLBACKS.max_seconds (or the welcome's rules)"], [FALLBACKS.max_in_flight, "FALLBACKS.max_in_flight (or the welcome's rules)"]])
    const found = []
    for (const file of sourceFiles()) {
      walk(file, (node, source, ts) => {
        if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) {
          // An emitter's own event names (ws.on("ping")) are not the protocol's.
          const call = node.parent
          const isListener = ts.isCallExpression(call) && ts.isPropertyAccessExpression(call.expression) && call.expression.name.text === "on"
          if (names.has(node.text) && !isListener) found.push(`${where(node, source)}: ${JSON.stringify(node.text)}: use ${names.get(node.text)}`)
        }
        if (ts.isTemplateHead(node) || ts.isTemplateMiddle(node) || ts.isTemplateTail(node) || ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) {
          for (const [value, use] of names) {
            if (node.text.includes(`"${value}"`)) found.push(`${where(node, source)}: "${value}" in a message: use ${use}`)
          }
        }
        if (ts.isNumericLiteral(node) && numbers.has(Number(node.text))) found.push(`${where(node, source)}: ${node.text}: use ${numbers.get(Number(node.text))}`)
        if (ts.isNumericLiteral(node) && Number(node.text) === PROTOCOL_VERSION && ts.isBinaryExpression(node.parent) && /version/i.test(node.parent.getText())) {
          found.push(`${where(node, source)}: the protocol version: use PROTOCOL_VERSION`)
        }
      })
    }
    assert.deepEqual(found, [], "lib/ takes these from lib/protocol.js")
  })

  test("every name lib/ reads from lib/protocol.js exists in lib/protocol.json", () => {
    const maps = { Ops, Events, Codes, ResumeStates, FALLBACKS }
    const missing = []
    let uses = 0
    for (const file of sourceFiles()) {
      walk(file, (node, source, ts) => {
        if (!ts.isPropertyAccessExpression(node) || !ts.isIdentifier(node.expression) || !(node.expression.text in maps)) return
        uses++
        if (!Object.hasOwn(maps[node.expression.text], node.name.text)) missing.push(`${where(node, source)}: ${node.getText()}`)
      })
    }
    assert.deepEqual(missing, [])
    assert.ok(uses > 40, `${uses} uses: the scan sees lib/'s uses of the protocol's names`)
  })

  test("the vocabulary is frozen and read as generated", () => {
    assert.match(spec.generated, /go generate \.\/bridge/)
    for (const [map, key] of [[Ops, "ops"], [Events, "events"], [Codes, "codes"], [ResumeStates, "resume_states"]]) {
      assert.ok(Object.isFrozen(map))
      assert.deepEqual({ ...map }, spec[key])
      for (const [name, value] of Object.entries(map)) assert.equal(name, value.toUpperCase())
    }
    assert.equal(PROTOCOL_VERSION, spec.version)
    assert.equal(SUBPROTOCOL, spec.subprotocol)
    assert.equal(CLIENT_HEADER, spec.client_header)
  })
})

// --- the bridge speaks it ------------------------------------------------------------------------

/** A raw WebSocket to the test bridge, as the client opens it; resolves {ws, welcome, call(frame)}. */
async function rawConnection(url) {
  const ws = new WebSocket(url, SUBPROTOCOL, { headers: { [CLIENT_HEADER]: "host=contract&pid=1&program=protocol.test" }, perMessageDeflate: false })
  const pending = new Map()
  let welcomed, welcomeFailed
  const welcome = new Promise((resolve, reject) => {
    welcomed = resolve
    welcomeFailed = reject
    ws.once("error", reject)
  })
  ws.on("message", (data) => {
    for (const msg of messagesOf(data)) {
      if (msg.id === undefined) welcomed(msg)
      pending.get(msg.id)?.(msg)
      pending.delete(msg.id)
    }
  })
  let closed
  ws.on("close", (code, reason) => {
    closed = new Error(`the bridge closed the connection: ${code} ${reason}`)
    for (const fail of pending.values()) fail(closed)
    pending.clear()
    welcomeFailed(closed)
  })
  const call = (frame) =>
    new Promise((resolve, reject) => {
      if (closed) return reject(closed)
      pending.set(frame.id, (msg) => (msg instanceof Error ? reject(msg) : resolve(msg)))
      ws.send(JSON.stringify(frame))
    })
  return { ws, welcome: await welcome, call }
}

describe("the bridge and lib/protocol.json", () => {
  test("agree on the subprotocol, the welcome, the ops and the error codes", async () => {
    const { ws, welcome, call } = await rawConnection(env.bridge.url)
    try {
      assert.equal(ws.protocol, SUBPROTOCOL)
      assert.equal(welcome.type, Events.WELCOME)
      assert.equal(welcome.version, PROTOCOL_VERSION)
      assert.equal(rulesProblem(welcome), null)
      // This bridge announces every run-time rule: the client needs no fallback with it.
      assert.equal(typeof welcome.heartbeat.margin_ms, "number")
      assert.equal(typeof welcome.limits.max_seconds, "number")
      assert.equal(typeof welcome.limits.max_in_flight, "number")
      assert.equal(typeof welcome.empty_owner_allowed, "boolean")

      const codes = new Set(Object.values(Codes))
      let id = 1
      for (const op of Object.values(Ops)) {
        const reply = await call({ id: id++, op })
        if (!reply.ok) {
          assert.notEqual(reply.error.code, Codes.UNKNOWN_OP, `the bridge knows the op ${op}`)
          assert.ok(codes.has(reply.error.code), `${op}: the code ${reply.error.code} is in lib/protocol.json`)
        }
      }
      assert.equal((await call({ id: id++, op: "no_such_op" })).error.code, Codes.UNKNOWN_OP)
      assert.equal((await call({ id: id++, op: Ops.ACQUIRE })).error.code, Codes.BAD_REQUEST)
      assert.equal((await call({ id: id++, op: Ops.LEASE_RELEASE, lease: "L999" })).error.code, Codes.UNKNOWN_LEASE)
      const tooLong = await call({ id: id++, op: Ops.ACQUIRE, keys: ["k"], expire: welcome.limits.max_seconds + 1 })
      assert.equal(tooLong.error.code, Codes.BAD_REQUEST, "the bridge refuses more than its max_seconds")
      const empty = await call({ id: id++, op: Ops.ACQUIRE, keys: ["k"], owner: "" })
      assert.equal(empty.ok, welcome.empty_owner_allowed, "the bridge refuses the empty owner as its welcome says")
    } finally {
      ws.close(1000)
    }
  })

  test("the client follows the bridge's welcome", async () => {
    const locks = env.provider()
    await locks.ready(20000)
    const link = locks.client_.current
    const welcome = link.welcome
    assert.deepEqual(link.rules, rulesOf(welcome))
    assert.equal(link.rules.marginMs, welcome.heartbeat.margin_ms)
    assert.equal(link.deadlines.margin, welcome.heartbeat.margin_ms)
    assert.equal(link.rules.maxSeconds, welcome.limits.max_seconds)
    assert.equal(link.maxInFlight, welcome.limits.max_in_flight)
    await assert.rejects(locks.acquire("pt_long", { ownerId: "o", expire: welcome.limits.max_seconds + 1 }), (err) => {
      assert.equal(err.type, "invalid_data")
      assert.match(err.message, new RegExp(`more than the bridge at \\S+ accepts \\(max_seconds ${welcome.limits.max_seconds}\\); nothing was sent$`))
      return true
    })
    await assert.rejects(locks.acquire("pt_empty", { ownerId: "" }), (err) => {
      assert.equal(err.type, "invalid_data")
      assert.match(err.message, /"ownerId" must not be an empty string/)
      return true
    })
    assert.equal(await env.raw.exists(NS + "pt_long", NS + "pt_empty"), 0)
  })
})

// --- welcome rules, announced and not ------------------------------------------------------------

/**
 * A fake bridge on a free port that sends welcome and answers requests as a bridge would (every
 * acquire and release succeeds, a lease is granted for a minute), the replies to one frame in one
 * frame (a batch when there are several); frames are the requests it got, and batches, for each
 * frame that held more than pings, how many requests it held and its size in bytes.
 */
async function fakeBridge(welcome) {
  const server = new WebSocket.WebSocketServer({ host: "127.0.0.1", port: 0, handleProtocols: (protocols) => [...protocols][0] })
  await new Promise((resolve) => server.once("listening", resolve))
  const frames = []
  const batches = []
  let leases = 0
  server.on("connection", (ws) => {
    ws.send(JSON.stringify({ type: Events.WELCOME, version: PROTOCOL_VERSION, namespace: NS, session: SESSION, resume_ms: 60000, ...welcome }))
    ws.on("message", (data) => {
      const requests = messagesOf(data)
      const counted = requests.filter((req) => req.op !== Ops.PING).length
      if (counted > 0) batches.push({ requests: counted, bytes: data.length })
      const replies = requests.map(answer)
      ws.send(replies.length === 1 ? replies[0] : `[${replies.join(",")}]`)
    })
    const answer = (req) => {
      if (req.op !== Ops.PING) frames.push(req)
      const result = {
        [Ops.ACQUIRE]: {},
        [Ops.RELEASE]: { released: true },
        [Ops.RELEASE_ALL]: { count: 0 },
        [Ops.LEASE]: { lease: `L${++leases}`, owner: "execute:x", valid_ms: 60000, waited_ms: 0 },
        [Ops.LEASE_RELEASE]: { released: true },
        [Ops.PING]: { leases: {} },
      }[req.op]
      return JSON.stringify({ id: req.id, ok: true, result })
    }
  })
  return {
    url: `ws://127.0.0.1:${server.address().port}/ws`,
    frames,
    batches,
    close: () => {
      for (const ws of server.clients) ws.terminate()
      return new Promise((resolve) => server.close(resolve))
    },
  }
}

/** A provider on url (closed by the test), ready. */
async function providerOn(url, options = {}) {
  const locks = createBridgeLockingProvider({ url, reconnectMinDelayMs: 20, reconnectMaxDelayMs: 200, ...options })
  env.onClose(() => locks.close())
  await locks.ready(5000)
  return locks
}

describe("batches (protocol version 3)", () => {
  test("the requests of one tick leave in one frame, within max_frame_bytes; a batch of replies is read reply by reply", async () => {
    const bridge = await fakeBridge({ heartbeat: { interval_ms: 1000, timeout_ms: 4000 }, limits: { max_frame_bytes: 2048 } })
    try {
      const locks = await providerOn(bridge.url)
      bridge.batches.length = 0
      const released = await Promise.all(["a", "b", "c"].map((k) => locks.release(k, { ownerId: "o" })))
      assert.deepEqual(released, [true, true, true], "every reply of the batch reached its call")
      assert.deepEqual(bridge.batches.map((b) => b.requests), [3], "three requests of one tick, one frame")

      // More than one frame holds: as few frames as max_frame_bytes allows, none larger.
      bridge.batches.length = 0
      const keys = Array.from({ length: 60 }, (_, i) => `key-${i}`)
      assert.ok((await Promise.all(keys.map((k) => locks.release(k, { ownerId: "o" })))).every(Boolean))
      assert.equal(bridge.batches.reduce((n, b) => n + b.requests, 0), 60)
      assert.ok(bridge.batches.length > 1 && bridge.batches.length < 10, `60 requests in ${bridge.batches.length} frames`)
      for (const b of bridge.batches) assert.ok(b.bytes <= 2048, `a frame of ${b.bytes} bytes`)
    } finally {
      await bridge.close()
    }
  })
})

describe("the welcome's run-time rules", () => {
  test("announced rules are the client's, whatever they are", async () => {
    const bridge = await fakeBridge({
      heartbeat: { interval_ms: 500, timeout_ms: 4000, margin_ms: 2000 },
      limits: { max_seconds: 100, max_in_flight: 8, max_keys: 4, max_frame_bytes: 65536 },
      empty_owner_allowed: true,
    })
    try {
      const locks = await providerOn(bridge.url)
      const link = locks.client_.current
      assert.deepEqual({ ...link.rules }, { intervalMs: 500, timeoutMs: 4000, marginMs: 2000, maxSeconds: 100, maxKeys: 4, maxFrameBytes: 65536, maxInFlight: 8, emptyOwnerAllowed: true })
      assert.equal(link.maxInFlight, 8)
      // The connection's leases are lost timeout_ms - margin_ms after the last answered request.
      assert.equal(link.deadlines.margin, 2000)
      assert.ok(Math.abs(link.deadlines.connectionDeadline - (link.deadlines.proof + 2000)) < 1e-6)

      // max_seconds 100: an expire above it is refused before it is sent; a timeout is capped.
      await assert.rejects(locks.acquire("k", { ownerId: "o", expire: 101 }), (err) => {
        assert.equal(err.type, "invalid_data")
        assert.match(err.message, /^locking-bridge: "expire" is 101 seconds, more than the bridge at \S+ accepts \(max_seconds 100\); nothing was sent$/)
        return true
      })
      await assert.rejects(locks.execute("k", async () => "never", { expire: 101 }), { type: "invalid_data" })
      assert.deepEqual(bridge.frames, [], "nothing was sent")
      await locks.acquire("k", { ownerId: "o", expire: 100 })
      for (const timeout of [1e6, Infinity]) assert.equal(await locks.execute("k", async () => "ran", { timeout }), "ran")
      const leases = bridge.frames.filter((f) => f.op === Ops.LEASE)
      assert.equal(leases.length, 2)
      for (const f of leases) assert.ok(f.timeout > 99 && f.timeout <= 100, `lease timeout ${f.timeout} is capped at max_seconds`)

      // empty_owner_allowed: the empty owner is sent as stock would store it.
      await locks.acquire("k", { ownerId: "" })
      assert.equal(bridge.frames.at(-1).owner, "")
      assert.equal(bridge.frames.at(-1).op, Ops.ACQUIRE)

      // A heartbeat interval must leave room for two pings before timeout_ms - margin_ms.
      await providerOn(bridge.url, { heartbeatIntervalMs: 1000 })
      const slow = createBridgeLockingProvider({ url: bridge.url, heartbeatIntervalMs: 1001 })
      env.onClose(() => slow.close())
      await assert.rejects(slow.ready(5000), (err) => {
        assert.equal(err.bridgeCode, "heartbeat_interval")
        assert.match(err.message, /must ping at least every 1000 ms \(\(timeout_ms - margin_ms\)\/2, margin_ms 2000\)/)
        return true
      })
    } finally {
      await bridge.close()
    }
  })

  test("a bridge that announces none of them gets the fallbacks: what older bridges did", async () => {
    const bridge = await fakeBridge({ heartbeat: { interval_ms: 1000, timeout_ms: 4000 }, limits: {} })
    try {
      const locks = await providerOn(bridge.url)
      const { rules, deadlines } = locks.client_.current
      assert.equal(rules.marginMs, 4000 / FALLBACKS.heartbeat_margin_divisor)
      assert.equal(deadlines.margin, rules.marginMs)
      assert.equal(rules.maxSeconds, FALLBACKS.max_seconds)
      assert.equal(rules.maxInFlight, FALLBACKS.max_in_flight)
      assert.equal(rules.emptyOwnerAllowed, false)
      await assert.rejects(locks.acquire("k", { ownerId: "" }), { type: "invalid_data" })
      await assert.rejects(locks.releaseAll({ ownerId: "" }), { type: "invalid_data" })
      await assert.rejects(locks.acquire("k", { ownerId: "o", expire: FALLBACKS.max_seconds + 1 }), { type: "invalid_data" })
      assert.deepEqual(bridge.frames, [], "nothing was sent")
      await locks.acquire("k", { ownerId: "o", expire: FALLBACKS.max_seconds })
      assert.equal(bridge.frames.length, 1)
    } finally {
      await bridge.close()
    }
  })

  test("announced rules a client cannot follow make the bridge unusable", async () => {
    for (const [welcome, problem] of [
      [{ heartbeat: { interval_ms: 1000, timeout_ms: 4000, margin_ms: 4000 } }, /heartbeat\.margin_ms 4000 \(it must be above 0 and below timeout_ms 4000\)/],
      [{ heartbeat: { interval_ms: 1000, timeout_ms: 4000, margin_ms: 0 } }, /heartbeat\.margin_ms 0/],
      [{ heartbeat: { interval_ms: 1000, timeout_ms: 4000 }, limits: { max_seconds: 0 } }, /limits\.max_seconds 0/],
      [{ heartbeat: { interval_ms: 1000, timeout_ms: 4000 }, limits: { max_seconds: "1e9" } }, /limits\.max_seconds "1e9"/],
      [{ heartbeat: { interval_ms: 1000 } }, /a welcome without a valid heartbeat/],
    ]) {
      const bridge = await fakeBridge(welcome)
      try {
        const locks = createBridgeLockingProvider({ url: bridge.url, reconnectMinDelayMs: 20 })
        env.onClose(() => locks.close())
        await assert.rejects(locks.ready(5000), (err) => {
          assert.equal(err.bridgeCode, "protocol")
          assert.match(err.message, problem)
          assert.match(err.message, new RegExp(`this client speaks protocol version ${PROTOCOL_VERSION}$`))
          return true
        })
        await locks.close()
      } finally {
        await bridge.close()
      }
    }
  })

})
