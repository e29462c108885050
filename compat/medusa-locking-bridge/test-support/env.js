"use strict"

// Test environment: a redis-server and a locktui bridge of our own on free loopback ports, a
// fault-injecting TCP proxy (test-support/faultproxy.js), and a guard against unhandled rejections. Everything started here is
// stopped by the test's after() hook, and killed when the process exits anyway.

const { spawn, spawnSync } = require("node:child_process")
const fs = require("node:fs")
const http = require("node:http")
const net = require("node:net")
const os = require("node:os")
const path = require("node:path")
const { setTimeout: sleep } = require("node:timers/promises")
const { FaultProxy } = require("./faultproxy")

const packageDir = path.resolve(__dirname, "..")
const compatDir = path.resolve(packageDir, "..")
const repoRoot = path.resolve(compatDir, "..")

// The stock @medusajs/locking-redis 2.21.2 provider, built as Medusa builds it:
// buildStockProvider({redisUrl, moduleOptions}) -> {provider, redis, close()}.
const { buildStockProvider } = require(path.join(compatDir, "stock", "build"))

const children = new Set()
process.on("exit", () => {
  for (const child of children) child.kill("SIGKILL")
})

/** Fails with a hint when compat/node_modules (npm ci in compat/) is missing. */
function requireCompat(name) {
  try {
    return require(name)
  } catch (err) {
    if (err.code === "MODULE_NOT_FOUND" && String(err.message).includes(`'${name}'`)) {
      throw new Error(`cannot load ${name}: install the Node dependencies first with \`make node-deps\` (npm ci in compat/)`)
    }
    throw err
  }
}

/** A free TCP port on 127.0.0.1 (never 6379). */
async function freePort() {
  for (;;) {
    const port = await new Promise((resolve, reject) => {
      const srv = net.createServer()
      srv.once("error", reject)
      srv.listen(0, "127.0.0.1", () => {
        const { port } = srv.address()
        srv.close(() => resolve(port))
      })
    })
    if (port !== 6379) return port
  }
}

function which(cmd) {
  const r = spawnSync(cmd, ["--version"], { stdio: "ignore" })
  return !r.error
}

/** Resolves when fn() resolves truthy; rejects after timeoutMs with what. */
async function waitFor(what, fn, timeoutMs = 15000, intervalMs = 50) {
  const until = Date.now() + timeoutMs
  let last
  for (;;) {
    try {
      if (await fn()) return
    } catch (err) {
      last = err
    }
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ""}`)
    await sleep(intervalMs)
  }
}

function track(child, name) {
  children.add(child)
  let stderr = ""
  child.stderr?.on("data", (d) => {
    if (stderr.length < 20000) stderr += d
  })
  child.exited = new Promise((resolve) => child.once("exit", (code, signal) => {
    children.delete(child)
    resolve({ code, signal })
  }))
  child.stderrText = () => stderr
  child.label = name
  return child
}

async function stopChild(child, signal = "SIGTERM") {
  if (!child || child.exitCode !== null || child.signalCode !== null) return
  child.kill(signal)
  const timer = setTimeout(() => child.kill("SIGKILL"), 5000)
  await child.exited
  clearTimeout(timer)
}

function redisPing(port) {
  return new Promise((resolve) => {
    const sock = net.connect(port, "127.0.0.1")
    let buf = ""
    const done = (ok) => {
      sock.destroy()
      resolve(ok)
    }
    sock.setTimeout(1000, () => done(false))
    sock.on("error", () => done(false))
    sock.on("data", (d) => {
      buf += d
      if (buf.includes("\r\n")) done(buf.startsWith("+PONG"))
    })
    sock.write("PING\r\n")
  })
}

/** Starts a redis-server on a free loopback port; returns {port, url, stop()}. */
async function startRedis() {
  if (!which("redis-server")) {
    throw new Error("redis-server is not installed: install Redis >= 6 (apt-get install redis-server, brew install redis) so that the tests can start their own server")
  }
  for (let attempt = 0; ; attempt++) {
    const port = await freePort()
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "locking-bridge-redis-"))
    const child = track(
      spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir], {
        stdio: ["ignore", "ignore", "pipe"],
      }),
      "redis-server"
    )
    const cleanup = () => fs.rmSync(dir, { recursive: true, force: true })
    try {
      await waitFor(`redis-server on port ${port}`, async () => {
        if (child.exitCode !== null) throw new Error(`redis-server exited: ${child.stderrText()}`)
        return redisPing(port)
      })
    } catch (err) {
      await stopChild(child, "SIGKILL")
      cleanup()
      if (attempt < 2) continue
      throw err
    }
    return {
      port,
      url: `redis://127.0.0.1:${port}`,
      stop: async () => {
        await stopChild(child)
        cleanup()
      },
    }
  }
}

const built = {}
/**
 * Builds cmd/<name> (or uses LOCKTUI_<NAME>_BIN) and returns the binary's path. The binary goes
 * to a per-checkout directory under the system temp dir, so that every test file (each runs in
 * its own process) reuses it: `go build -o` skips the link when the binary is up to date. A lock
 * directory serializes concurrent builds.
 */
function buildCmd(name) {
  const preset = process.env[`LOCKTUI_${name.toUpperCase()}_BIN`]
  if (preset) return Promise.resolve(preset)
  built[name] ??= (async () => {
    if (!which("go")) {
      throw new Error(`go is not installed: install Go (https://go.dev/dl/) to build ${name} (go build ./cmd/${name}), or set LOCKTUI_${name.toUpperCase()}_BIN to a built ${name}`)
    }
    const tag = require("node:crypto").createHash("sha256").update(repoRoot).digest("hex").slice(0, 12)
    const dir = path.join(os.tmpdir(), `locking-bridge-test-${process.getuid?.() ?? "u"}-${tag}`)
    fs.mkdirSync(dir, { recursive: true })
    const bin = path.join(dir, name)
    const lock = path.join(dir, `build-${name}.lock`)
    await waitFor(`the ${name} build lock`, () => {
      try {
        fs.mkdirSync(lock)
        return true
      } catch (err) {
        if (err.code !== "EEXIST") throw err
        // A lock left by a killed build is stale after 5 minutes.
        if (Date.now() - fs.statSync(lock).mtimeMs > 5 * 60 * 1000) fs.rmSync(lock, { recursive: true, force: true })
        return false
      }
    }, 10 * 60 * 1000, 100)
    try {
      const child = spawn("go", ["build", "-o", bin, `./cmd/${name}`], { cwd: repoRoot, stdio: ["ignore", "ignore", "pipe"] })
      let stderr = ""
      child.stderr.on("data", (d) => (stderr += d))
      const code = await new Promise((resolve) => child.on("close", resolve))
      if (code !== 0) throw new Error(`go build ./cmd/${name} failed:\n${stderr}`)
    } finally {
      fs.rmSync(lock, { recursive: true, force: true })
    }
    return bin
  })()
  return built[name]
}

/** Builds cmd/bridge (see buildCmd). */
const buildBridge = () => buildCmd("bridge")

/** Runs the locktui CLI (built by buildCmd) with args; resolves {code, stdout, stderr}. */
async function locktui(args) {
  const bin = await buildCmd("locktui")
  const child = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"] })
  let stdout = ""
  let stderr = ""
  child.stdout.on("data", (d) => (stdout += d))
  child.stderr.on("data", (d) => (stderr += d))
  const code = await new Promise((resolve) => child.on("close", resolve))
  return { code, stdout, stderr }
}

/**
 * The holder record of lock key (without namespace) in namespace, as `locktui get --json` reads
 * it from the Redis at url: its fields (host, pid, prog, kind, fence, ...), or null when there is
 * none.
 */
async function holderRecord(url, namespace, key) {
  const r = await locktui(["get", key, "--json", "--redis", url, "--namespace", namespace])
  if (r.code !== 0) throw new Error(`locktui get ${key} exited ${r.code}: ${r.stderr}`)
  return JSON.parse(r.stdout).record?.fields ?? null
}

function httpStatus(url) {
  return new Promise((resolve) => {
    const get = url.startsWith("https:") ? (u, cb) => require("node:https").get(u, { rejectUnauthorized: false }, cb) : http.get
    const req = get(url, (res) => {
      res.resume()
      resolve(res.statusCode)
    })
    req.setTimeout(1000, () => req.destroy())
    req.on("error", () => resolve(0))
  })
}

/**
 * Starts the bridge on a free loopback port (or port) against redisUrl. With a token it requires
 * that token; without, it runs --insecure. tls ({cert, key} files, see selfSignedCert) serves
 * wss://. args are more flags (e.g. ["--client-timeout", "1s"]).
 * Returns {url (ws), httpUrl, port, child, stop() (SIGTERM), kill() (SIGKILL), metric(name)}.
 */
async function startBridge({ redisUrl, token, namespace, port, tls, args: extra = [] } = {}) {
  const bin = await buildBridge()
  port ??= await freePort()
  const args = ["--listen", `127.0.0.1:${port}`, "--redis", redisUrl, ...extra]
  if (namespace !== undefined) args.push("--namespace", namespace)
  if (tls) args.push("--tls-cert", tls.cert, "--tls-key", tls.key)
  if (!token) args.push("--insecure")
  const env = { ...process.env }
  if (token) env.BRIDGE_TOKEN = token
  else delete env.BRIDGE_TOKEN
  const child = track(spawn(bin, args, { env, stdio: ["ignore", "ignore", "pipe"] }), "bridge")
  const httpUrl = `${tls ? "https" : "http"}://127.0.0.1:${port}`
  await waitFor(`the bridge on port ${port}`, async () => {
    if (child.exitCode !== null) throw new Error(`the bridge exited: ${child.stderrText()}`)
    return (await httpStatus(`${httpUrl}/readyz`)) === 200
  })
  return {
    port,
    httpUrl,
    url: `${tls ? "wss" : "ws"}://127.0.0.1:${port}/ws`,
    child,
    stop: () => stopChild(child),
    kill: () => stopChild(child, "SIGKILL"),
    /** The sum of a metric's samples whose labels match every given label, from /metrics. */
    metric: async (name, labels = {}) => {
      const text = await httpText(`${httpUrl}/metrics`)
      let sum = 0
      for (const line of text.split("\n")) {
        const m = /^([a-z_]+)(\{[^}]*\})? ([0-9.e+-]+)$/.exec(line)
        if (!m || m[1] !== name) continue
        if (Object.entries(labels).every(([k, v]) => (m[2] ?? "").includes(`${k}="${v}"`))) sum += Number(m[3])
      }
      return sum
    },
  }
}

function httpText(url) {
  return new Promise((resolve, reject) => {
    const req = (url.startsWith("https:") ? (u, cb) => require("node:https").get(u, { rejectUnauthorized: false }, cb) : http.get)(url, (res) => {
      let body = ""
      res.setEncoding("utf8")
      res.on("data", (d) => (body += d))
      res.on("end", () => resolve(body))
    })
    req.setTimeout(2000, () => req.destroy(new Error("timeout")))
    req.on("error", reject)
  })
}

/**
 * A self-signed TLS certificate (its own CA) for the host names dns, made with the openssl
 * command in a temporary directory: {cert, key} (file paths), ca (the certificate's PEM text, for
 * wsOptions.ca) and remove().
 */
function selfSignedCert(dns = ["localhost"]) {
  if (!which("openssl")) throw new Error("openssl is not installed: the TLS tests make their certificate with it (apt-get install -y openssl)")
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "locking-bridge-tls-"))
  const cert = path.join(dir, "cert.pem")
  const key = path.join(dir, "key.pem")
  const r = spawnSync("openssl", [
    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
    "-subj", `/CN=${dns[0]}`, "-addext", `subjectAltName=${dns.map((d) => `DNS:${d}`).join(",")}`,
    "-keyout", key, "-out", cert,
  ], { encoding: "utf8" })
  if (r.status !== 0) throw new Error(`openssl req failed: ${r.stderr}`)
  return { cert, key, ca: fs.readFileSync(cert, "utf8"), remove: () => fs.rmSync(dir, { recursive: true, force: true }) }
}

/** A fault-injecting TCP proxy to targetPort (see test-support/faultproxy.js). */
function startProxy(targetPort) {
  return FaultProxy.start(targetPort)
}

/**
 * Records unhandled rejections from now on; check() throws if any happened. Use with
 * after(() => guard.check()).
 */
function guardUnhandledRejections() {
  const seen = []
  process.on("unhandledRejection", (reason) => seen.push(reason))
  return {
    seen,
    check() {
      if (seen.length > 0) {
        throw new Error(`unhandled rejection(s): ${seen.map((e) => e?.stack ?? String(e)).join("\n")}`)
      }
    },
  }
}

/**
 * The messages of one WebSocket frame of the bridge protocol: one JSON object, or a batch (a JSON
 * array of them, docs/bridge-protocol.md "Frames"). For the scripted bridges of the tests.
 */
function messagesOf(data) {
  const parsed = JSON.parse(String(data))
  return Array.isArray(parsed) ? parsed : [parsed]
}

/** An ioredis client on url (from compat/node_modules). */
function redisClient(url) {
  const Redis = requireCompat("ioredis")
  return new Redis(url, { maxRetriesPerRequest: 1 })
}

module.exports = {
  packageDir,
  compatDir,
  repoRoot,
  requireCompat,
  freePort,
  waitFor,
  startRedis,
  buildBridge,
  buildCmd,
  locktui,
  holderRecord,
  startBridge,
  selfSignedCert,
  startProxy,
  stopChild,
  guardUnhandledRejections,
  redisClient,
  messagesOf,
  buildStockProvider,
  sleep,
}

/**
 * Registers before/after hooks that start Redis and a bridge for the calling test file and stop
 * them afterwards, and an unhandled-rejection guard checked at the end. Returns an object filled
 * by the before hook: {redis, bridge, raw (ioredis client), provider(options), onClose(fn), guard}.
 * provider(options) builds a createBridgeLockingProvider on the bridge (closed in after()).
 *
 * Node 20 runs a file's top-level before() hooks concurrently, so a file's own set-up goes in
 * `setup(env)` (run once the bridge is up) and its clean-up in env.onClose(fn) (run, last
 * registered first, before the bridge and Redis stop).
 */
function useBridgeEnv({ token, bridgeOptions, setup } = {}) {
  const { before, after } = require("node:test")
  const { createBridgeLockingProvider } = require("..")
  const env = { guard: guardUnhandledRejections() }
  const closers = []
  env.onClose = (fn) => closers.push(fn)
  env.provider = (options = {}) => {
    const p = createBridgeLockingProvider({ url: env.bridge.url, token, ...options })
    closers.push(() => p.close())
    return p
  }
  before(async () => {
    env.redis = await startRedis()
    env.bridge = await startBridge({ redisUrl: env.redis.url, token, ...bridgeOptions })
    env.raw = redisClient(env.redis.url)
    closers.push(() => env.raw.quit())
    await setup?.(env)
  }, { timeout: 180000 })
  after(async () => {
    for (const close of closers.reverse()) await close()
    await env.bridge?.stop()
    await env.redis?.stop()
    env.guard.check()
  }, { timeout: 30000 })
  return env
}

module.exports.useBridgeEnv = useBridgeEnv
