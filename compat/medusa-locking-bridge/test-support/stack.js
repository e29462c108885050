"use strict"

// A bridge between two fault proxies, for the safety tests: client -> clientProxy -> bridge ->
// redisProxy -> redis-server. The bridge can be stopped (SIGTERM), killed (SIGKILL) and started
// again on the same port, so that clients reconnect through the same proxy.

const { startBridge, startProxy, stopChild } = require("./env")

/**
 * @param {{redis: {port: number}, args?: string[]}} opts args: more bridge flags
 */
async function startStack({ redis, args = [] }) {
  const redisProxy = await startProxy(redis.port)
  const redisUrl = `redis://127.0.0.1:${redisProxy.port}`
  let bridge = await startBridge({ redisUrl, args })
  const clientProxy = await startProxy(bridge.port)
  return {
    redisProxy,
    clientProxy,
    /** The URL clients use: through clientProxy. */
    url: clientProxy.url,
    get bridge() {
      return bridge
    },
    /** Ends the bridge with signal and resolves with {code, signal, at} (at: performance.now()). */
    async end(signal = "SIGKILL") {
      const exit = bridge.child.exited.then((r) => ({ ...r, at: performance.now() }))
      await stopChild(bridge.child, signal)
      return exit
    },
    /** Starts a bridge again on the same port. */
    async start() {
      bridge = await startBridge({ redisUrl, args, port: bridge.port })
    },
    async stop() {
      await clientProxy.stop()
      await bridge.stop()
      await redisProxy.stop()
    },
  }
}

/**
 * Polls key with a raw Redis client until it is gone (deleted or expired). lastPresentSentAt is
 * the send time (performance.now()) of the last poll that still found it: whatever happened
 * before that time happened while the key was held.
 */
function watchKey(raw, key) {
  const w = { lastPresentSentAt: -Infinity, stopped: false }
  w.gone = (async () => {
    while (!w.stopped) {
      const sentAt = performance.now()
      if ((await raw.exists(key)) !== 1) return performance.now()
      w.lastPresentSentAt = sentAt
      await new Promise((resolve) => setTimeout(resolve, 1))
    }
  })()
  w.stop = () => {
    w.stopped = true
  }
  return w
}

/** Records the close() calls ({code, at}) of one client WebSocket (the client's socket.ws). */
function recordCloses(ws) {
  const calls = []
  const close = ws.close
  ws.close = function (code, reason) {
    calls.push({ code, at: performance.now() })
    return close.call(this, code, reason)
  }
  return { calls }
}

module.exports = { startStack, watchKey, recordCloses }
