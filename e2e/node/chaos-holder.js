#!/usr/bin/env node
// One Node lock holder of the chaos run (e2e/chaos_test.go): the stock @medusajs/locking-redis
// 2.21.2 provider, built the way Medusa's module loader builds it, or the bridge client
// (@locktui/medusa-locking-bridge). It runs execute on a random key again and again until it is
// killed, and logs on the machine's monotonic clock (process.hrtime.bigint(), which is Go's
// chaos.MonoNow on Linux) when its job starts and stops believing that it holds the key.
//
// Usage: node e2e/node/chaos-holder.js '<config JSON>'
//
//   config = {
//     "compatDir": "<repo>/compat",   // where the npm packages are installed (required)
//     "backend": "stock" | "bridge",  // which provider (required)
//     "redisUrl": "redis://…",        // stock: the Redis it connects to
//     "bridgeUrl": "ws://…/ws",       // bridge: the bridge it connects to (or a list, in order)
//     "token": "…",                   // bridge: its token
//     "holder": "stock-1#0",          // the holder id of its log lines (required)
//     "log": "/…/stock-1#0.jsonl",    // the log file it appends to (required)
//     "keys": ["chaos:0", …],         // the lock keys (required)
//     "expire": 2,                    // execute's expire, seconds
//     "timeout": 5,                   // execute's timeout, seconds
//     "workMs": 20,                   // longest work of a job
//     "longMs": 6000,                 // longest long work (see longPercent)
//     "longPercent": 0                // percentage of jobs that work longMs/2 to longMs
//   }
//
// Log lines (one writeSync each, on a file opened for appending): enter when the job starts,
// exit when it ends, lost when the job's AbortSignal aborts while it runs (the job then stops
// believing and ends at once). Diagnostics and a count of outcomes every 10 s go to stderr.
// SIGTERM ends the loop after the current execute; the holder then closes its provider and
// exits 0.
"use strict"

const fs = require("node:fs")
const { setTimeout: sleep } = require("node:timers/promises")
const { buildProvider } = require("./providers")
const { startScript } = require("./script")

const { config, compatRequire, fatal } = startScript("chaos holder", ["holder", "log", "keys"])
const fd = fs.openSync(config.log, "a")
const holder = config.holder
const expire = config.expire ?? 2
const timeout = config.timeout ?? 5
const workMs = config.workMs ?? 20
const longMs = config.longMs ?? 0
const longPercent = config.longPercent ?? 0
let stopping = false
process.on("SIGTERM", () => {
  stopping = true
})

/** Appends one event; the BigInt's digits go into the line as they are (JSON cannot hold it). */
function log(key, ev, extra = "") {
  const line = `{"t":${process.hrtime.bigint()},"holder":${JSON.stringify(holder)},"key":${JSON.stringify(key)},"ev":"${ev}"${extra}}\n`
  fs.writeSync(fd, line)
}

const quiet = { info() {}, debug() {}, warn: (m) => process.stderr.write(`[warn] ${m}\n`), error: (m) => process.stderr.write(`[error] ${m}\n`) }

/** The job: believes from its start until it ends or its signal aborts. */
async function job(key, signal) {
  log(key, "enter")
  if (signal?.aborted) {
    log(key, "lost")
    return
  }
  const work =
    longMs > 0 && Math.random() * 100 < longPercent
      ? longMs / 2 + Math.floor(Math.random() * (longMs / 2 + 1))
      : Math.floor(Math.random() * (workMs + 1))
  // The belief ends when the signal aborts: "lost" is written inside the abort listener, before
  // the bridge client goes on to release the lease in the same task (a log written after an
  // await would come later than the release, and the checker would see a later holder enter
  // while this one seemed to believe).
  let done = false
  const aborted = new Promise((resolve) =>
    signal?.addEventListener("abort", () => {
      if (!done) {
        done = true
        log(key, "lost")
      }
      resolve()
    }, { once: true }))
  await Promise.race([sleep(work), aborted])
  if (!done) {
    done = true
    log(key, "exit")
  }
}

async function main() {
  const { provider, close } = await buildProvider(config, compatRequire, quiet)
  const counts = { done: 0, failed: 0 }
  let lastError = ""
  // Not unref'd: it also keeps the process alive. Without it a holder whose execute waits to
  // resend its lease request after a dropped connection exits with code 0 (the bridge client
  // unrefs its reconnect timer then, and nothing else is pending), where a stock execute's
  // timeout timer would have kept it running.
  setInterval(() => {
    process.stderr.write(`chaos holder ${holder}: ${counts.done} done, ${counts.failed} failed (last: ${lastError})\n`)
  }, 10000)
  while (!stopping) {
    const key = config.keys[Math.floor(Math.random() * config.keys.length)]
    try {
      await provider.execute([key], (signal) => job(key, signal), { expire, timeout })
      counts.done++
    } catch (err) {
      counts.failed++
      lastError = String(err?.message ?? err)
      await sleep(10)
    }
  }
  process.stderr.write(`chaos holder ${holder}: ${counts.done} done, ${counts.failed} failed (last: ${lastError}); stopping\n`)
  await close()
  process.exit(0)
}

main().catch((err) => fatal(err?.stack ?? String(err)))
