"use strict"
// The floor under the bridge's uncontended execute: one no-op WebSocket round trip between Node
// and the bridge (a protocol `ping`, which touches no Redis), against stock Medusa's whole
// execute (two Redis round trips), one call at a time, in one Node process, interleaved
// (rounds of bridge pings, stock executes and bridge executes), on a redis-server and a bridge
// of its own. If one ping round trip costs about what stock's whole execute does, the bridge's
// execute (a round trip to the bridge plus the bridge's Redis round trips) cannot reach stock's
// rate on this machine, whatever the bridge and the client do.
//
// Usage (from the repository root, after make node-deps): node compat/bench/floor.js [rounds]

const WebSocket = require("ws")
const { startRedis, startBridge, buildStockProvider } = require("../medusa-locking-bridge/test-support/env")
const { createBridgeLockingProvider } = require("../medusa-locking-bridge")

const CALLS = 2000

async function timed(n, fn) {
  const lat = []
  const start = performance.now()
  for (let i = 0; i < n; i++) {
    const t = performance.now()
    await fn(i)
    lat.push(performance.now() - t)
  }
  const wall = performance.now() - start
  lat.sort((a, b) => a - b)
  return { rate: (n / wall) * 1000, p50: lat[Math.floor(n / 2)] }
}

function pinger(url, token) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, require("../medusa-locking-bridge/lib/protocol").SUBPROTOCOL, { headers: { Authorization: `Bearer ${token}` }, perMessageDeflate: false })
    const pending = new Map()
    let id = 0
    ws.on("error", reject)
    ws.on("message", (data) => {
      const msg = JSON.parse(String(data))
      if (msg.type === "welcome") return resolve({ ping: () => new Promise((r) => { pending.set(++id, r); ws.send(JSON.stringify({ id, op: "ping" })) }), close: () => ws.close(1000) })
      pending.get(msg.id)?.()
      pending.delete(msg.id)
    })
  })
}

async function main() {
  const rounds = Number(process.argv[2] ?? 3)
  const token = "floor-token"
  const redis = await startRedis()
  const bridge = await startBridge({ redisUrl: redis.url, token, namespace: "floor:bridge:", args: ["--events=false"] })
  const stock = await buildStockProvider({ redisUrl: redis.url, namespace: "floor:stock:" })
  const client = createBridgeLockingProvider({ url: bridge.url, token })
  await client.ready(10000)
  const ping = await pinger(bridge.url, token)
  const job = async () => {}
  const rows = { "bridge ping round trip": [], "stock execute": [], "bridge execute": [] }
  try {
    for (let r = 0; r < rounds; r++) {
      rows["bridge ping round trip"].push(await timed(CALLS, () => ping.ping()))
      rows["stock execute"].push(await timed(CALLS, () => stock.provider.execute("k", job)))
      rows["bridge execute"].push(await timed(CALLS, () => client.execute("k", job)))
    }
  } finally {
    ping.close()
    await client.close()
    stock.redis.disconnect()
    await bridge.stop()
    await redis.stop()
  }
  const stockRates = rows["stock execute"].map((x) => x.rate)
  console.log("| one call at a time | calls/s per round | p50 ms per round | × stock execute (same round) |")
  console.log("|---|---|---|---|")
  for (const [name, rs] of Object.entries(rows)) {
    const f = (xs, d) => xs.map((x) => x.toFixed(d)).join(" / ")
    console.log(`| ${name} | ${f(rs.map((x) => x.rate), 0)} | ${f(rs.map((x) => x.p50), 3)} | ${f(rs.map((x, i) => x.rate / stockRates[i]), 2)} |`)
  }
}

main().then(() => process.exit(0), (err) => {
  console.error(err)
  process.exit(1)
})
