"use strict"
// Shared worker loop of the Node benchmark runners (see internal/bench in the Go module).
//
// A runner script builds its lock implementation and calls main(impl). The harness reads
// scenarios (JSON objects, the Go type bench.Spec), runs each with the same loop and the same raw
// observations as the Go runner (bench.Raw) and prints them as JSON; see main and serve for the
// protocol. The metrics themselves are computed by the Go side, so every implementation is
// measured by the same definitions.
//
// impl = {
//   name: "stock",
//   // open(spec) resolves to a provider: { execute(keys, job, {timeout, expire}), close() }
//   open: async (spec) => provider,
//   // optional: is this error execute's acquisition timeout? Default: the stock message.
//   isTimeout: (err) => boolean,
// }

const { performance } = require("node:perf_hooks")
const readline = require("node:readline")
const { setTimeout: sleep } = require("node:timers/promises")
const Redis = require("ioredis")

const TIMEOUT_MESSAGE = "Timed-out acquiring lock."

function defaultIsTimeout(err) {
  return Boolean(err) && err.message === TIMEOUT_MESSAGE
}

/** Rounds milliseconds to microseconds, which keeps the JSON small. */
function micros(ms) {
  return Math.round(ms * 1000) / 1000
}

/** Runs one scenario against provider and resolves to a Raw object. */
async function runScenario(spec, provider, counter, isTimeout) {
  const args = { timeout: spec.timeout_s, expire: spec.expire_s }
  for (let i = 0; i < spec.warmup; i++) {
    await provider.execute([spec.warmup_key], async () => {}, args)
  }
  if (spec.warmup > 0) {
    // One concurrent round, each worker on a key of its own, as the Go runner does.
    const round = []
    for (let i = 0; i < spec.workers; i++) {
      round.push(provider.execute([`${spec.warmup_key}:${i}`], async () => {}, args))
    }
    await Promise.all(round)
  }
  if (spec.counter_key && !spec.keep_counter) {
    await counter.del(spec.counter_key)
  }

  const workers = spec.workers
  const completed = new Array(workers).fill(0)
  const inFlight = new Array(spec.keys.length).fill(0)
  const raw = {
    completed,
    timeouts: 0,
    errors: 0,
    wait_ms: [],
    latency_ms: [],
    hold_ms_sum: 0,
    overlaps: 0,
    redis_max: 0,
    window_ms: 0,
    drain_ms: 0,
    runtime: "node " + process.version,
    window_start_unix_ms: 0,
    cpu_ms: 0,
  }
  // Per worker, the wall-clock start of each job (contended scenarios), as in the Go runner.
  const starts = spec.counter_key ? Array.from({ length: workers }, () => []) : undefined
  let firstError

  // The job: enter (in-process counter, Redis INCR), hold cs_ms, exit (DECR, counter).
  async function criticalSection(keyIdx) {
    inFlight[keyIdx]++
    if (inFlight[keyIdx] > 1) {
      raw.overlaps++
    }
    try {
      if (spec.counter_key) {
        const v = await counter.incr(spec.counter_key)
        if (v > raw.redis_max) {
          raw.redis_max = v
        }
        try {
          if (spec.cs_ms > 0) {
            await sleep(spec.cs_ms)
          }
        } finally {
          await counter.decr(spec.counter_key)
        }
      } else if (spec.cs_ms > 0) {
        await sleep(spec.cs_ms)
      }
    } finally {
      inFlight[keyIdx]--
    }
  }

  let wallAtStart = 0 // set when the window opens, below

  async function work(i, deadline) {
    const keyIdx = i % spec.keys.length
    const keys = [spec.keys[keyIdx]]
    // The first call is made even if the worker starts late, as in the Go runner.
    for (let first = true; first || performance.now() < deadline; first = false) {
      let jobStart = 0
      let hold = 0
      const call = performance.now()
      try {
        await provider.execute(
          keys,
          async () => {
            jobStart = performance.now()
            try {
              await criticalSection(keyIdx)
            } finally {
              hold = performance.now() - jobStart
            }
          },
          args
        )
      } catch (err) {
        if (isTimeout(err)) {
          raw.timeouts++
          continue
        }
        raw.errors++
        if (firstError === undefined) {
          firstError = String((err && err.message) || err)
        }
        return
      }
      const end = performance.now()
      if (end <= deadline) {
        completed[i]++
        raw.hold_ms_sum += hold
      }
      raw.wait_ms.push(micros(jobStart - call))
      raw.latency_ms.push(micros(end - call))
      if (starts) {
        starts[i].push(micros(wallAtStart + jobStart - start))
      }
    }
  }

  // Processes of a multi-process scenario open their windows together, at start_at_unix_ms.
  // Wall-clock times are read from Date.now(), the system clock as it is now, never from
  // performance.timeOrigin: that is the wall clock when this process started, and a clock step
  // since (NTP on a virtual machine) would date this window, and every section in it, away from
  // the Go processes' and let the windows of the processes drift apart.
  if (spec.start_at_unix_ms) {
    const late = Date.now() - spec.start_at_unix_ms
    if (late < 0) {
      await sleep(-late)
    } else {
      raw.start_late_ms = micros(late)
    }
  }
  // The window's wall-clock origin: a section's date is wallAtStart + (its performance.now() -
  // start), monotonic inside the window whatever the system clock does meanwhile. Date.now()
  // counts whole milliseconds: the window opens the instant it ticks over, so that wallAtStart
  // and start name the same instant to the microsecond, as the Go runners' times do.
  const before = Date.now()
  while ((wallAtStart = Date.now()) === before) {
    // at most a millisecond
  }
  const cpu0 = process.cpuUsage()
  const start = performance.now()
  const deadline = start + spec.duration_ms
  const loops = []
  for (let i = 0; i < workers; i++) {
    loops.push(work(i, deadline))
  }
  await Promise.all(loops)
  const cpu = process.cpuUsage(cpu0)
  raw.window_ms = deadline - start
  raw.drain_ms = Math.max(performance.now() - deadline, 0)
  raw.window_start_unix_ms = micros(wallAtStart)
  raw.cpu_ms = (cpu.user + cpu.system) / 1000
  if (starts) {
    raw.cs_start_unix_ms = starts
  }
  if (firstError !== undefined) {
    raw.first_error = firstError
  }
  return raw
}

/**
 * The client of the INCR/DECR counter: a Redis.Cluster for a locktui cluster URL
 * (redis://host:port?cluster=true&addr=host2:port2&…, see redisconn in the Go module), else a
 * standalone client. Connect it before use.
 */
function counterClient(url) {
  const u = new URL(url)
  if (u.searchParams.get("cluster") !== "true") {
    return new Redis(url, { lazyConnect: true })
  }
  const nodes = [u.host, ...u.searchParams.getAll("addr")].map((addr) => {
    const i = addr.lastIndexOf(":")
    return { host: addr.slice(0, i), port: Number(addr.slice(i + 1)) }
  })
  return new Redis.Cluster(nodes, { lazyConnect: true })
}

/** Runs spec with a fresh provider from impl and the shared counter client. */
async function runWith(impl, spec, counter) {
  const provider = await impl.open(spec)
  try {
    return await runScenario(spec, provider, counter, impl.isTimeout || defaultIsTimeout)
  } finally {
    await provider.close()
  }
}

function writeLine(obj) {
  return new Promise((resolve) => process.stdout.write(JSON.stringify(obj) + "\n", resolve))
}

/**
 * Serves scenarios: first a {"ready": true} line, then for each spec on a stdin line one
 * {"raw": …} or {"error": "…"} line on stdout, in order. Resolves when stdin closes.
 */
async function serve(impl) {
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity })
  // The runner script has loaded its modules by now: tell the Go side that the start-up (which
  // takes CPU) is over, so it does not overlap a measurement.
  await writeLine({ ready: true })
  let counter
  try {
    for await (const line of rl) {
      if (!line.trim()) {
        continue
      }
      let answer
      try {
        const spec = JSON.parse(line)
        if (!counter) {
          counter = counterClient(spec.redis_url)
          await counter.connect()
        }
        answer = { raw: await runWith(impl, spec, counter) }
      } catch (err) {
        answer = { error: String((err && err.message) || err) }
      }
      await writeLine(answer)
    }
  } finally {
    if (counter) {
      counter.disconnect()
    }
  }
}

/** Runs the one spec given as argv[2] and prints its Raw. */
async function once(impl, arg) {
  const spec = JSON.parse(arg)
  const counter = counterClient(spec.redis_url)
  await counter.connect()
  try {
    await writeLine(await runWith(impl, spec, counter))
  } finally {
    counter.disconnect()
  }
}

/**
 * Entry point of a runner script: `--serve` (what the Go side starts) or one scenario as a JSON
 * argument (for a run by hand). Exits explicitly when done: stock execute leaves a timer per
 * call running for timeout_s, which would otherwise keep the process alive.
 */
function main(impl) {
  const arg = process.argv[2]
  if (!arg) {
    process.stderr.write(`usage: node ${process.argv[1]} --serve | '<scenario JSON>'\n`)
    process.exit(2)
  }
  // Stock execute releases keys of a timed-out call in the background, unhandled; such a late
  // failure must not end a run.
  process.on("unhandledRejection", (err) => {
    process.stderr.write(`warn: unhandled rejection: ${(err && err.message) || err}\n`)
  })
  const work = arg === "--serve" ? serve(impl) : once(impl, arg)
  work.then(
    () => process.exit(0),
    (err) => {
      process.stderr.write(`${impl.name} runner failed: ${(err && err.message) || err}\n`)
      process.exit(1)
    }
  )
}

module.exports = { main, runScenario, defaultIsTimeout, TIMEOUT_MESSAGE }
