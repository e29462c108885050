"use strict"
// A lock that does not lock: execute runs the job at once. The Go tests of internal/bench run
// it to prove that the harness's overlap detectors (in-process and the Redis counter) fire.
//
// Usage: node bench/testdata/nolock-bench.js --serve | '<scenario JSON>'

const { main } = require("../harness")

main({
  name: "nolock",
  async open() {
    return {
      execute: async (keys, job) => job(new AbortController().signal),
      close: () => {},
    }
  },
})
