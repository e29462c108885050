"use strict"

// The Medusa loader fails fast at start-up: with no bridge that accepts the client, or a bridge
// that refuses the token, it rejects with one line naming the option to fix and leaves nothing
// running (test-support/loader-child.js runs it in a process of its own, which must then end by
// itself); with lazyConnect it starts without checking and says so.

const { spawn } = require("node:child_process")
const path = require("node:path")
const { describe, test } = require("node:test")
const assert = require("node:assert/strict")
const { useBridgeEnv, startBridge, selfSignedCert, freePort, requireCompat, compatDir } = require("../test-support/env")
const { bootstrapLocking } = require("../test-support/medusa")
const { startupVerdict } = require("../lib/startup")
const pkg = require("..")

const TOKEN = "loader-token"
/** A second bridge on the same Redis that wants another token. */
let other
/** A bridge on the same Redis with another namespace. */
let elsewhere
/** A bridge serving wss:// with a self-signed certificate for the name locktui-test.invalid only. */
let tlsBridge
let cert
const env = useBridgeEnv({
  token: TOKEN,
  setup: async (env) => {
    other = await startBridge({ redisUrl: env.redis.url, token: "another-token" })
    env.onClose(() => other.stop())
    elsewhere = await startBridge({ redisUrl: env.redis.url, token: TOKEN, namespace: "other_lock:" })
    env.onClose(() => elsewhere.stop())
    cert = selfSignedCert(["locktui-test.invalid"])
    env.onClose(() => cert.remove())
    tlsBridge = await startBridge({ redisUrl: env.redis.url, token: TOKEN, tls: cert })
    env.onClose(() => tlsBridge.stop())
  },
})

/** text as a literal in a RegExp. */
const quote = (text) => text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")

/** Options no leaked timer could hide behind: a reconnect would wait 30 s or more. */
const SLOW = { reconnectMinDelayMs: 60000, reconnectMaxDelayMs: 120000 }

/** Runs the loader in a process of its own (loader-child.js); resolves its report and exit code. */
async function loaderInChild(options) {
  const child = spawn(process.execPath, [path.join(__dirname, "..", "test-support", "loader-child.js"), JSON.stringify({ ...SLOW, ...options })], {
    stdio: ["ignore", "pipe", "inherit"],
  })
  let out = ""
  child.stdout.on("data", (d) => (out += d))
  const code = await new Promise((resolve) => child.on("exit", resolve))
  const lines = out.trim().split("\n")
  assert.equal(lines.length, 1, `one report line: ${out}`)
  return { ...JSON.parse(lines[0]), code }
}

/** Asserts a rejection that is one line and left nothing that keeps the process alive. */
function assertFailedFast(report, pattern) {
  assert.equal(report.outcome, "rejected", JSON.stringify(report))
  assert.match(report.message, pattern)
  assert.doesNotMatch(report.message, /\n/)
  assert.deepEqual(report.handles, [], "no socket or timer of the client is left")
  assert.equal(report.code, 0, "the process ended by itself")
}

/** The loader in this process; resolves {client, logs} (the client is closed by the caller). */
async function loaderHere(options) {
  const logs = []
  const logger = Object.fromEntries(["info", "warn", "error"].map((level) => [level, (m) => logs.push([level, m])]))
  const registered = {}
  await pkg.loader({ container: { register: (r) => Object.assign(registered, r) }, logger, options })
  const client = registered.lockingBridgeClient.resolve()
  env.onClose(() => client.close())
  return { client, logs }
}

describe("the loader at start-up", () => {
  test("a bridge that works: resolves, registers a connected client, logs the connection", async () => {
    const { client, logs } = await loaderHere({ url: env.bridge.url, token: TOKEN })
    assert.equal(client.connected, true)
    assert.ok(logs.some(([level, m]) => level === "info" && m.startsWith(`Connection to the bridge in "locking-bridge" provider established (${env.bridge.url})`)), JSON.stringify(logs))
  })

  test("a wrong token: rejects with one line naming the token option, leaving nothing open", async () => {
    const report = await loaderInChild({ url: env.bridge.url, token: "wrong-token" })
    assertFailedFast(report, /^locking-bridge: cannot start: the bridge at ws:\/\/127\.0\.0\.1:\d+\/ws refused the token \(HTTP 401.*\); check the "token" option$/)
    assert.doesNotMatch(report.message, /wrong-token/)
  })

  test("an unreachable URL: rejects with one line naming the url option, leaving nothing open", async () => {
    const url = `ws://127.0.0.1:${await freePort()}/ws`
    const report = await loaderInChild({ url, token: TOKEN })
    const quoted = url.replace(/[./]/g, "\\$&")
    assertFailedFast(report, new RegExp(`^locking-bridge: cannot start: no bridge answered at ${quoted}: connect ECONNREFUSED [^;]*; check the "url" option \\(or start the bridge\\)$`))
  })

  test("a bridge further down the list that refuses the token is fatal, though the first accepts it", async () => {
    const report = await loaderInChild({ url: [env.bridge.url, other.url], token: TOKEN })
    assertFailedFast(report, new RegExp(`^locking-bridge: cannot start: the bridge at ${other.url.replace(/[./]/g, "\\$&")} refused the token \\(HTTP 401`))
  })

  // Defect: a standby of another lock domain passed the start-up check.
  test("a bridge further down the list with another namespace is fatal, naming both URLs and namespaces", async () => {
    const report = await loaderInChild({ url: [env.bridge.url, elsewhere.url], token: TOKEN })
    assertFailedFast(report, new RegExp(`^locking-bridge: cannot start: the bridge at ${quote(elsewhere.url)} serves the lock namespace "other_lock:", but the bridge at ${quote(env.bridge.url)} serves "medusa_lock:".*check the "url" option`))
  })

  // Defect: a certificate that fails verification at a standby was only a warning at start-up.
  test("a failover URL whose TLS certificate fails verification is fatal: an untrusted CA names wsOptions, a wrong host names url", async () => {
    const untrusted = await loaderInChild({ url: [env.bridge.url, tlsBridge.url], token: TOKEN })
    assertFailedFast(untrusted, new RegExp(`^locking-bridge: cannot start: the bridge at ${quote(tlsBridge.url)} presented a TLS certificate this client does not trust \\(.*DEPTH_ZERO_SELF_SIGNED_CERT\\); give the CA that signed it in the "wsOptions" option \\(ca\\)$`))
    const wrongHost = await loaderInChild({ url: [env.bridge.url, tlsBridge.url], token: TOKEN, wsOptions: { ca: cert.ca } })
    assertFailedFast(wrongHost, new RegExp(`^locking-bridge: cannot start: the TLS certificate of the bridge at ${quote(tlsBridge.url)} does not name its host \\(.*ERR_TLS_CERT_ALTNAME_INVALID\\); check the host in the "url" option`))
    // With the CA and a name the certificate has, TLS works (the name resolves through a lookup of our own).
    const { client } = await loaderHere({
      url: tlsBridge.url.replace("127.0.0.1", "locktui-test.invalid"),
      token: TOKEN,
      wsOptions: { ca: cert.ca, lookup: (host, opts, cb) => (opts?.all ? cb(null, [{ address: "127.0.0.1", family: 4 }]) : cb(null, "127.0.0.1", 4)) },
    })
    assert.equal(client.connected, true)
  })

  test("startupVerdict: certificate-verification errors are fatal, naming the option to fix", () => {
    const target = { display: "wss://bridge-b.internal:7420/ws" }
    const ok = { display: "wss://bridge-a.internal:7420/ws" }
    const cases = {
      UNABLE_TO_VERIFY_LEAF_SIGNATURE: /does not trust .*"wsOptions" option \(ca\)$/,
      DEPTH_ZERO_SELF_SIGNED_CERT: /does not trust .*"wsOptions" option \(ca\)$/,
      SELF_SIGNED_CERT_IN_CHAIN: /does not trust .*"wsOptions" option \(ca\)$/,
      UNABLE_TO_GET_ISSUER_CERT_LOCALLY: /does not trust .*"wsOptions" option \(ca\)$/,
      ERR_TLS_CERT_ALTNAME_INVALID: /does not name its host .*"url" option/,
      CERT_HAS_EXPIRED: /has expired or is not valid yet .*--tls-cert/,
    }
    for (const [code, pattern] of Object.entries(cases)) {
      const error = Object.assign(new Error(`tls: ${code.toLowerCase()}`), { code })
      const { error: verdict, warnings } = startupVerdict([ok, target], new Map([[ok, null], [target, error]]))
      assert.ok(verdict, `${code}: not fatal`)
      assert.match(verdict.message, /^locking-bridge: cannot start: /)
      assert.match(verdict.message, pattern, code)
      assert.ok(verdict.message.includes(code), `${code} named`)
      assert.deepEqual(warnings, [])
    }
    const refused = Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" })
    const down = startupVerdict([ok, target], new Map([[ok, null], [target, refused]]))
    assert.equal(down.error, null, "a standby that is down stays a warning")
    assert.equal(down.warnings.length, 1)
  })

  test("a failover URL that does not answer is a warning; the loader starts on the one that works", async () => {
    const down = `ws://127.0.0.1:${await freePort()}/ws`
    const { client, logs } = await loaderHere({ url: [down, env.bridge.url], token: TOKEN })
    assert.equal(client.current.display, env.bridge.url)
    assert.ok(logs.some(([level, m]) => level === "warn" && m.startsWith(`locking-bridge: the bridge at ${down} did not answer at start-up (connect ECONNREFUSED`)), JSON.stringify(logs))
  })

  test("invalid options reject with one line before anything connects", async () => {
    const report = await loaderInChild({ url: [env.bridge.url, "not a url"], token: TOKEN })
    assertFailedFast(report, /^locking-bridge: URL 2 of the "url" option is not a valid URL \(the entry is not shown: it may contain credentials\)$/)
    await assert.rejects(pkg.loader({ container: { register() {} }, options: { url: env.bridge.url, lazyConnect: "yes" } }), {
      message: 'locking-bridge: the "lazyConnect" option must be true or false, got "yes"',
    })
  })
})

describe("lazyConnect", () => {
  test("an unreachable URL: resolves at once and logs that it started without checking", async () => {
    const url = `ws://127.0.0.1:${await freePort()}/ws`
    const report = await loaderInChild({ url, token: TOKEN, lazyConnect: true })
    assert.equal(report.outcome, "resolved", JSON.stringify(report))
    assert.equal(report.code, 0)
    const warning = report.logs.find(([level, m]) => level === "warn" && m.startsWith("locking-bridge: started without checking the bridge"))
    assert.ok(warning, JSON.stringify(report.logs))
    assert.match(warning[1], new RegExp(`^locking-bridge: started without checking the bridge at ${url.replace(/[./]/g, "\\$&")} \\(lazyConnect\\); calls wait for a connection`))
    assert.doesNotMatch(warning[1], /\n/)
  })

  test("a wrong token: resolves; the calls fail with the refused token", async () => {
    const { client, logs } = await loaderHere({ url: env.bridge.url, token: "wrong-token", lazyConnect: true })
    assert.ok(logs.some(([level, m]) => level === "warn" && /started without checking/.test(m)))
    await assert.rejects(client.ready(60000), { bridgeCode: "unauthorized" })
  })
})

describe("through Medusa's module loader", () => {
  test("MedusaModule.bootstrap of the Locking module fails with the loader's line", async () => {
    const { MedusaModule } = requireCompat("@medusajs/framework/modules-sdk")
    const { Modules } = requireCompat("@medusajs/framework/utils")
    const logger = { info: () => {}, warn: () => {}, error: () => {}, debug: () => {}, log: () => {} }
    // Medusa also rejects the module's loading promise, which nothing awaits (at `medusa start`
    // the process exits with the error): mark it handled so it is not an unhandled rejection.
    const loading = MedusaModule.loading_
    const set = loading.set
    loading.set = function (key, promise) {
      promise.catch(() => {})
      return set.call(this, key, promise)
    }
    try {
      await assert.rejects(
        bootstrapLocking({ MedusaModule, Modules }, {
          providers: [{ resolve: path.join(__dirname, ".."), id: "bridge", is_default: true, options: { url: env.bridge.url, token: "wrong-token" } }],
          logger,
          cwd: compatDir,
        }),
        (err) => {
          assert.match(err.message, /Loaders for module Locking failed: locking-bridge: cannot start: the bridge at \S+ refused the token \(HTTP 401.*\); check the "token" option$/m)
          return true
        }
      )
    } finally {
      loading.set = set
      MedusaModule.clearInstances()
    }
  })
})
