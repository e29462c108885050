"use strict"
// The lock-free runner of nolock-bench.js in a process whose performance.timeOrigin is a minute
// behind the system clock, as after the clock was stepped forward a minute since the process
// started. The Go tests of internal/bench run it to prove that the harness dates its window by
// the system clock as it is now.
//
// Usage: node bench/testdata/stale-origin-bench.js --serve | '<scenario JSON>'

const { performance } = require("node:perf_hooks")

const staleBy = 60_000
const origin = performance.timeOrigin - staleBy
Object.defineProperty(performance, "timeOrigin", { get: () => origin })

require("./nolock-bench")
