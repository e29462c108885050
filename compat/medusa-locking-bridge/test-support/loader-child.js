"use strict"

// A process for the tests of the Medusa loader's start-up check: `node loader-child.js OPTIONS`
// runs the package's loader with the provider options OPTIONS (JSON), as Medusa runs it at
// `medusa start`, and prints one JSON line:
//
//   {"outcome": "resolved" | "rejected", "message": <the rejection's message>,
//    "logs": [[level, message], …], "handles": <process.getActiveResourcesInfo() then>}
//
// handles is read once the loader settled and the sockets it destroyed are closed (see report):
// after a rejection, nothing of the client (a socket, a timer that keeps the process alive) may
// be left. After a
// resolution it closes the client the loader registered first. It never calls process.exit():
// the process must end by itself.

const { loader, BridgeLockingProvider } = require("..")

const options = JSON.parse(process.argv[2])
const logs = []
const logger = Object.fromEntries(["info", "warn", "error", "debug"].map((level) => [level, (m) => logs.push([level, String(m)])]))
const registered = {}
const container = { register: (regs) => Object.assign(registered, regs) }

/** The resources that keep this process alive (stdout and stderr aside). */
function handles() {
  return process.getActiveResourcesInfo().filter((h) => h !== "TTYWrap" && h !== "PipeWrap")
}

/**
 * Prints the report once no handle is left, or after a few turns of the event loop: a socket
 * destroyed in this turn is closed by the loop in the same turn or the next one, while one
 * still open, or a ref'd timer, stays.
 */
function report(outcome, message, turns = 10) {
  setImmediate(() => {
    if (handles().length > 0 && turns > 0) return report(outcome, message, turns - 1)
    process.stdout.write(JSON.stringify({ outcome, message, logs, handles: handles() }) + "\n")
  })
}

loader({ container, logger, options }).then(
  async () => {
    const provider = new BridgeLockingProvider(Object.fromEntries(Object.entries(registered).map(([k, v]) => [k, v.resolve()])), {})
    await provider.close()
    report("resolved")
  },
  (err) => report("rejected", err.message)
)
