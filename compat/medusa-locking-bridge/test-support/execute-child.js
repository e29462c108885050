"use strict"

// A client process for tests of what keeps a process alive: `node execute-child.js URL KEY` runs
// one execute on KEY through the bridge at URL (insecure) and reports on stdout, one line each:
// "waiting" every time its lease request is in flight, "settled <value>" or "rejected <message>"
// when the execute settles (it then closes the client and exits 0). If the process is about to
// exit while the execute is still pending (nothing kept the event loop alive), it says so and
// exits with code 3: the promise was never settled. Without KEY it makes no call: it prints
// "connected" once connected and then leaves the client idle, never closing it.

const { createBridgeLockingProvider } = require("..")

const [url, key] = process.argv.slice(2)
const locks = createBridgeLockingProvider({ url, reconnectMinDelayMs: 20, reconnectMaxDelayMs: 200 })
if (!key) {
  locks.client_.ready(30000).then(() => console.log("connected"))
  return
}
let settled = false
let inFlight = 0
// Reports only: unref'd, so it never keeps the process alive itself.
setInterval(() => {
  const n = locks.client_.inflightCount
  if (n === 1 && inFlight !== 1) console.log("waiting")
  inFlight = n
}, 2).unref()
locks
  .execute(key, async () => "ran", { timeout: 120 })
  .then(
    (value) => console.log(`settled ${value}`),
    (err) => console.log(`rejected ${err.message}`)
  )
  .finally(() => {
    settled = true
    return locks.close()
  })
process.on("exit", () => {
  if (settled) return
  process.stdout.write("exit with the execute pending\n")
  process.exitCode = 3
})
