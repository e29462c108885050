#!/usr/bin/env node
// One lock client process for the end-to-end tests: either the bridge client
// (@locktui/medusa-locking-bridge, talking to a running bridge) or the stock
// @medusajs/locking-redis 2.21.2 provider built the way Medusa's module loader builds it.
//
// Usage: node e2e/node/worker.js '<config JSON>'
//
//   config = {
//     "compatDir": "<repo>/compat",   // where the npm packages are installed (required)
//     "backend": "bridge" | "stock",  // which provider (required)
//     "redisUrl": "redis://…",        // required: the stock provider and the counter use it
//     "bridgeUrl": "ws://…/ws",       // bridge only
//     "token": "…"                    // bridge only
//   }
//
// Protocol: JSON lines. Requests on stdin: {"id", "op", "args"}. Replies on stdout:
// {"id", "ok": true, "result"} or {"id", "ok": false, "error": {"type", "message", "code"}}.
// Events on stdout carry "event": ready (the provider is connected), holding (a hold job runs).
//
// Ops:
//   count   {key, n, timeout, expire, workMs, name, counterKey, logKey, insideKey, maxKey, enterLua}
//           runs n executes on key one after another; each job enters the overlap detector
//           (EVAL enterLua with KEYS insideKey, maxKey), reads counterKey, waits workMs, writes
//           it back plus one, appends name to logKey and leaves (DECR insideKey) -> {"done": n}
//   hold    {key, timeout, expire}    an execute whose job reports "holding" and never ends
//                                     (no reply; the test kills the process)
//   acquire {keys, options}           provider.acquire -> null
//   release {keys, options}           provider.release -> true | false
//
// Diagnostics go to stderr. When stdin closes the worker closes the provider and exits.
"use strict"

const readline = require("node:readline")
const { setTimeout: sleep } = require("node:timers/promises")
const { buildProvider } = require("./providers")
const { startScript } = require("./script")

const { config, compatRequire, fatal } = startScript("e2e worker", ["redisUrl"])
let Redis
try {
  Redis = compatRequire("ioredis")
} catch (err) {
  fatal(`cannot load ioredis from ${config.compatDir} (${err.message}); run \`make node-deps\``)
}

function send(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n")
}

function describe(err) {
  return {
    type: String(err?.type ?? err?.name ?? "Error"),
    message: String(err?.message ?? err),
    code: err?.bridgeCode ?? null,
  }
}

const logger = {
  info: (m) => process.stderr.write(`e2e worker [info] ${m}\n`),
  warn: (m) => process.stderr.write(`e2e worker [warn] ${m}\n`),
  error: (m) => process.stderr.write(`e2e worker [error] ${m}\n`),
  debug: () => {},
}

/** The critical section of one increment: detector in, read-modify-write, log, detector out. */
async function increment(raw, a) {
  await raw.eval(a.enterLua, 2, a.insideKey, a.maxKey)
  try {
    const value = Number((await raw.get(a.counterKey)) ?? 0)
    await sleep(Number(a.workMs ?? 0))
    await raw.set(a.counterKey, String(value + 1))
    await raw.rpush(a.logKey, a.name)
  } finally {
    await raw.decr(a.insideKey)
  }
}

async function handle(req, env) {
  const { provider, raw } = env
  const a = req.args ?? {}
  switch (req.op) {
    case "count": {
      for (let i = 0; i < a.n; i++) {
        await provider.execute([a.key], () => increment(raw, a), { timeout: a.timeout, expire: a.expire })
      }
      return { done: a.n }
    }
    case "hold":
      return await provider.execute(
        [a.key],
        async () => {
          send({ event: "holding", id: req.id, key: a.key })
          await new Promise(() => {}) // until the process is killed
        },
        { timeout: a.timeout, expire: a.expire }
      )
    case "acquire":
      return (await provider.acquire(a.keys, a.options)) ?? null
    case "release":
      return await provider.release(a.keys, a.options)
    default:
      throw new TypeError(`unknown op ${JSON.stringify(req.op)}: use count, hold, acquire or release`)
  }
}

async function main() {
  let built
  try {
    built = await buildProvider(config, compatRequire, logger)
  } catch (err) {
    fatal(`cannot build the ${config.backend} provider: ${err?.stack ?? err}`)
  }
  const raw = new Redis(config.redisUrl)
  await raw.ping()
  const env = { provider: built.provider, raw }
  send({ event: "ready", backend: config.backend, pid: process.pid })

  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity })
  rl.on("line", (line) => {
    if (!line.trim()) return
    let req
    try {
      req = JSON.parse(line)
    } catch (err) {
      send({ id: null, ok: false, error: { type: "bad_request", message: `invalid JSON: ${err.message}`, code: null } })
      return
    }
    handle(req, env).then(
      (result) => send({ id: req.id, ok: true, result: result ?? null }),
      (err) => send({ id: req.id, ok: false, error: describe(err) })
    )
  })
  rl.on("close", async () => {
    try {
      await built.close()
    } catch (err) {
      process.stderr.write(`e2e worker: close: ${err?.message ?? err}\n`)
    }
    raw.disconnect()
    process.exit(0)
  })
}

main()
