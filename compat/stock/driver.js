#!/usr/bin/env node
// Drives the stock @medusajs/locking-redis 2.21.2 provider for the Go compatibility tests.
//
// Usage: node stock/driver.js '<config JSON>'
//
//   config = {
//     "redisUrl": "redis://127.0.0.1:6390",     // required
//     "namespace": "medusa_lock:",              // provider option; omitted = stock default
//     "redisOptions": {...},                    // provider option, passed to ioredis
//     "moduleOptions": {"waitLockingTimeout": 5, ...}, // Locking-module-level tuning
//     "trace": false                            // emit a "script" event per Lua script call
//   }
//
// The provider is built the way Medusa builds it (see build.js): the package's own loader gets
// the provider options and registers `redisClient` and `prefix` in a Medusa container, then the
// service class is constructed with that container's cradle and the Locking module's options
// (where 2.21.2 reads its tuning from).
//
// Protocol: JSON lines. Requests on stdin: {"id": <any>, "op": <string>, "args": {...}}.
// Replies on stdout: {"id", "ok": true, "result"} or {"id", "ok": false, "error": {"type",
// "message", "name", "medusa"}}. Events on stdout carry "event" instead of "ok": ready, log,
// job_started, job_aborted, job_finished, script, unhandled_rejection.
//
// Ops (options objects are handed to the provider verbatim, so omitted fields stay undefined):
//   ping       {}                              -> {"pong": true}
//   acquire    {keys, options}                 -> null
//   release    {keys, options}                 -> true | false
//   releaseAll {options}                       -> null
//   execute    {keys, options, job}            -> the job's result (reply comes when execute settles)
//   finish     {name, throw?, value?}          -> true (ends a running "hold" job)
//
// Jobs: {"kind": "value", "value": v} returns v; {"kind": "hold", "name": n} reports
// job_started and waits for `finish` naming it, then returns {"aborted", "value"};
// {"kind": "buy", "stockKey", "activeKey", "overlapKey", "workMs"} is the stock test's "buy":
// if the counter at stockKey is positive it waits workMs and decrements it, while counting
// overlapping jobs (activeKey) into overlapKey; it returns {"bought", "aborted"}.
//
// Logs go to stderr only. When stdin closes the driver answers the requests in flight (running
// hold jobs end with an error), then exits; a call still pending after 5 s is abandoned.
"use strict"

const readline = require("node:readline")
const { setTimeout: sleep } = require("node:timers/promises")

function fatal(message) {
  process.stderr.write(`stock driver: ${message}\n`)
  process.exit(2)
}

const nodeMajor = Number(process.versions.node.split(".")[0])
if (nodeMajor < 20) {
  fatal(`Node ${process.versions.node} is too old: @medusajs/locking-redis 2.21.2 needs Node >= 20`)
}

let config
try {
  config = JSON.parse(process.argv[2] ?? "")
} catch (err) {
  fatal(`the first argument must be a JSON config such as '{"redisUrl":"redis://127.0.0.1:6379"}' (${err.message})`)
}
if (!config || typeof config !== "object" || typeof config.redisUrl !== "string" || !config.redisUrl) {
  fatal(`the config needs a "redisUrl" string, e.g. '{"redisUrl":"redis://127.0.0.1:6379"}'`)
}

const { buildStockProvider, DEPS_HINT } = require("./build")

let Redis
try {
  Redis = require("ioredis")
} catch (err) {
  fatal(`cannot load the stock packages (${err.message}); ${DEPS_HINT}`)
}

/** Writes one JSON line to stdout (synchronous for pipes on Linux, so lines never interleave). */
function send(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n")
}

/** Describes an error for a reply: type (MedusaError type, ioredis/JS name otherwise), message, name. */
function describe(err) {
  if (err instanceof Error || (err && typeof err === "object")) {
    return {
      type: err.type ?? err.name ?? "Error",
      message: String(err.message ?? err),
      name: err.name ?? "Error",
      medusa: err.__isMedusaError === true,
    }
  }
  return { type: "thrown", message: String(err), name: typeof err, medusa: false }
}

function log(level, message) {
  process.stderr.write(`stock driver [${level}] ${message}\n`)
  send({ event: "log", level, message: String(message) })
}

const logger = {
  info: (m) => log("info", m),
  warn: (m) => log("warn", m),
  error: (m) => log("error", m),
  debug: (m) => log("debug", m),
}

process.on("unhandledRejection", (reason) => {
  // 2.21.2 can leave a rejected late release unhandled (execute after a timeout); report it
  // instead of letting Node end the driver.
  process.stderr.write(`stock driver: unhandled rejection: ${reason?.stack ?? reason}\n`)
  send({ event: "unhandled_rejection", error: describe(reason) })
})

/** Builds the provider as Medusa's module loader does and returns it with a raw client. */
async function build() {
  const { provider, redis } = await buildStockProvider({
    redisUrl: config.redisUrl,
    namespace: config.namespace,
    redisOptions: config.redisOptions,
    moduleOptions: config.moduleOptions,
    logger,
  })
  const raw = new Redis(config.redisUrl, config.redisOptions ?? {})
  return { provider, client: redis, raw }
}

/** Wraps the stock client's script commands to report each call as a "script" event. */
function trace(client) {
  for (const name of ["acquireLock", "extendLock", "releaseLock"]) {
    const original = client[name].bind(client)
    client[name] = async (...args) => {
      const result = await original(...args)
      send({ event: "script", name, key: String(args[0]), args: args.slice(1).map(String), result })
      return result
    }
  }
}

const running = new Map() // hold-job name -> {finish(cmd)}
const reserved = new Set() // hold-job names of execute calls in flight
let closing = false // stdin closed: hold jobs end at once
const stdinClosed = { throw: "stock driver: stdin closed" }

function makeJob(id, spec, raw) {
  switch (spec?.kind) {
    case "value":
      return async () => spec.value ?? null
    case "hold":
      return async (signal) => {
        const name = spec.name
        const command = closing ? Promise.resolve(stdinClosed) : new Promise((resolve) => running.set(name, { finish: resolve }))
        signal?.addEventListener("abort", () => {
          send({ event: "job_aborted", id, name, reason: describe(signal.reason) })
        })
        send({ event: "job_started", id, name, aborted: signal?.aborted === true })
        let cmd
        try {
          cmd = await command
        } finally {
          running.delete(name)
        }
        send({ event: "job_finished", id, name, aborted: signal?.aborted === true })
        if (typeof cmd.throw === "string") {
          throw new Error(cmd.throw)
        }
        return { aborted: signal?.aborted === true, value: cmd.value ?? null }
      }
    case "buy":
      return async (signal) => {
        const active = await raw.incr(spec.activeKey)
        try {
          if (active > 1) await raw.incr(spec.overlapKey)
          const stock = Number(await raw.get(spec.stockKey))
          let bought = false
          if (stock > 0) {
            await sleep(Number(spec.workMs ?? 10))
            await raw.set(spec.stockKey, String(stock - 1))
            bought = true
          }
          return { bought, aborted: signal?.aborted === true }
        } finally {
          await raw.decr(spec.activeKey)
        }
      }
    default:
      throw new TypeError(`unknown job kind ${JSON.stringify(spec?.kind)}: use "value", "hold" or "buy"`)
  }
}

async function handle(req, env) {
  const { provider, raw } = env
  const args = req.args ?? {}
  switch (req.op) {
    case "ping":
      return { pong: true }
    case "acquire":
      return (await provider.acquire(args.keys, args.options)) ?? null
    case "release":
      return await provider.release(args.keys, args.options)
    case "releaseAll":
      return (await provider.releaseAll(args.options)) ?? null
    case "execute": {
      const name = args.job?.kind === "hold" ? String(args.job.name ?? "") : null
      if (name !== null) {
        if (!name) throw new TypeError(`a "hold" job needs a non-empty "name"`)
        if (reserved.has(name)) throw new TypeError(`a hold job named ${JSON.stringify(name)} is already in flight`)
        reserved.add(name)
      }
      try {
        const job = makeJob(req.id, args.job, raw)
        return (await provider.execute(args.keys, job, args.options)) ?? null
      } finally {
        if (name !== null) reserved.delete(name)
      }
    }
    case "finish": {
      const job = running.get(String(args.name))
      if (!job) throw new TypeError(`no running hold job named ${JSON.stringify(args.name)}`)
      job.finish({ throw: args.throw, value: args.value })
      return true
    }
    default:
      throw new TypeError(`unknown op ${JSON.stringify(req.op)}: use ping, acquire, release, releaseAll, execute or finish`)
  }
}

async function main() {
  let env
  try {
    env = await build()
  } catch (err) {
    fatal(`cannot build the stock provider: ${err.message}`)
  }
  if (config.trace) trace(env.client)
  const pkg = require("@medusajs/locking-redis/package.json")
  const ioredisPkg = require("ioredis/package.json")
  send({
    event: "ready",
    versions: { lockingRedis: pkg.version, ioredis: ioredisPkg.version, node: process.versions.node },
    namespace: env.provider.keyNamePrefix,
    tuning: {
      waitLockingTimeout: env.provider.waitLockingTimeout,
      defaultRetryInterval: env.provider.defaultRetryInterval,
      maximumRetryInterval: env.provider.maximumRetryInterval,
      backoffFactor: env.provider.backoffFactor,
    },
  })

  let inFlight = 0
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity })
  rl.on("line", (line) => {
    if (!line.trim()) return
    let req
    try {
      req = JSON.parse(line)
    } catch (err) {
      send({ id: null, ok: false, error: { type: "bad_request", message: `invalid JSON request: ${err.message}`, name: "SyntaxError", medusa: false } })
      return
    }
    if (!req || typeof req !== "object" || Array.isArray(req)) {
      send({ id: null, ok: false, error: { type: "bad_request", message: "a request must be a JSON object", name: "TypeError", medusa: false } })
      return
    }
    inFlight++
    handle(req, env)
      .then(
        (result) => send({ id: req.id ?? null, ok: true, result: result ?? null }),
        (err) => send({ id: req.id ?? null, ok: false, error: describe(err) })
      )
      .finally(() => {
        inFlight--
        if (closing && inFlight === 0) exit()
      })
  })
  rl.on("close", () => {
    // Answer what is in flight, end waiting hold jobs, and exit; a stuck call gets 5 s.
    closing = true
    for (const job of running.values()) job.finish(stdinClosed)
    if (inFlight === 0) exit()
    setTimeout(exit, 5000).unref()
  })

  function exit() {
    // Stock 2.21.2 has no shutdown hook and its execute timer is not unref'd: end explicitly.
    env.client.disconnect()
    env.raw.disconnect()
    process.exit(0)
  }
}

main()
