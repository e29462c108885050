"use strict"

// One WebSocket connection to a locktui bridge (protocol v1), kept open with reconnects.
//
// * Calls made while disconnected wait for the connection, each up to its own limit.
// * Requests in flight when the connection drops: release and release_all are sent again once
//   it is back (they are owner-checked, so a repeat can only find the key already released);
//   everything else rejects with a `connection_lost` error, because its outcome is unknown.
// * Leases belong to the connection: when it drops the bridge releases them, so every lease is
//   lost at once and its signal aborted.

const WebSocket = require("ws")
const { Types, lockingError, lockLost } = require("./errors")
const { Lease } = require("./lease")
const { DEFAULTS, MAX_TIMER_MS, parseUrl, describeUrl, msOption } = require("./options")

const SUBPROTOCOL = "locktui-bridge.v1"
const PROTOCOL_VERSION = 1
/** HTTP statuses of a refused upgrade that no retry fixes by itself. */
const FATAL_STATUSES = new Set([400, 401, 403, 404])

/** One connection to the bridge, reconnected with jittered exponential backoff until close(). */
class BridgeConnection {
  /**
   * @param {object} options url, token, logger, wsOptions and the *Ms tuning options (DEFAULTS).
   */
  constructor(options) {
    this.url = parseUrl(options.url)
    this.display = describeUrl(this.url)
    if (options.token !== undefined && options.token !== null && (typeof options.token !== "string" || options.token === "")) {
      throw new Error(`locking-bridge: the "token" option must be a non-empty string`)
    }
    this.token = options.token || undefined
    for (const name of Object.keys(DEFAULTS)) this[name] = msOption(options, name)
    this.wsOptions = options.wsOptions ?? {}
    this.logger = options.logger
    // The Medusa loader reports the first attempt itself, as locking-redis does.
    this.reportFirstFailure = options.reportFirstFailure !== false

    this.ws = null
    this.socket = null // per-socket state: { ws, error, welcomeTimer }
    this.welcome = null // set while the connection is usable
    this.closed = false
    this.closing = null
    this.attempt = 0
    this.lastError = null // why the last attempt failed or the last connection ended
    this.fatal = null // an error no reconnect fixes by itself (bad token, not a bridge)
    this.nextId = 1
    this.maxInFlight = 256
    this.inflight = new Map() // id -> entry, sent
    this.queue = [] // entries not sent yet
    this.leases = new Map() // lease id -> Lease
    this.waiters = new Set() // ready() calls
    this.reconnectTimer = null
    this.heartbeat = null
    this.alive = false
    this.firstAttempt = new Promise((resolve) => {
      this.settleFirstAttempt = resolve
    })
    this.connect()
  }

  /** True while a connection is open and welcomed. */
  get connected() {
    return this.welcome !== null
  }

  /**
   * Resolves when the connection is up (at once if it is). Rejects after timeoutMs (default
   * connectTimeoutMs), at once when the bridge refused the client for good (bad token), or when
   * the client is closed.
   */
  ready(timeoutMs = this.connectTimeoutMs) {
    if (this.closed) return Promise.reject(this.closedError())
    if (this.welcome) return Promise.resolve()
    if (this.fatal) return Promise.reject(this.fatal)
    return new Promise((resolve, reject) => {
      const waiter = { resolve, reject, timer: null }
      const started = Date.now()
      if (timeoutMs < MAX_TIMER_MS) {
        waiter.timer = setTimeout(() => {
          this.waiters.delete(waiter)
          reject(this.notConnected(Date.now() - started))
        }, timeoutMs)
      }
      this.waiters.add(waiter)
    })
  }

  /**
   * Sends one request and resolves with its result, or rejects with the bridge's error rebuilt
   * as a (Medusa)Error of the same type and message.
   *
   * @param {string} op
   * @param {object} fields
   * @param {{retry?: boolean, connectWaitMs?: number, deadline?: number, transform?: Function}} [opts]
   *   retry: send again after a reconnect when the connection drops while in flight;
   *   connectWaitMs: how long to wait for a connection (Infinity: no limit);
   *   deadline: absolute time (ms) after which waiting for a connection fails, instead of connectWaitMs;
   *   transform: applied to the result synchronously, as the reply is read.
   */
  request(op, fields, opts = {}) {
    if (this.closed) return Promise.reject(this.closedError())
    return new Promise((resolve, reject) => {
      this.enqueue({
        op,
        fields,
        retry: opts.retry === true,
        connectWaitMs: opts.connectWaitMs ?? this.connectTimeoutMs,
        deadline: opts.deadline,
        transform: opts.transform,
        resolve,
        reject,
        timer: null,
        id: null,
      })
    })
  }

  /** Takes a lease on keys; resolves with a Lease. */
  lease(keys, timeoutSeconds, expireSeconds, deadline) {
    return this.request(
      "lease",
      { keys, timeout: timeoutSeconds, expire: expireSeconds },
      {
        deadline,
        transform: (result) => {
          const lease = new Lease(this, result.lease, result.owner, keys)
          this.leases.set(lease.id, lease)
          return lease
        },
      }
    )
  }

  /** Closes the connection for good: pending calls reject, leases are lost, no reconnects. */
  close() {
    if (this.closing) return this.closing
    this.closed = true
    clearTimeout(this.reconnectTimer)
    this.reconnectTimer = null
    const err = this.closedError()
    this.failAll(err)
    for (const entry of this.inflight.values()) entry.reject(err)
    this.inflight.clear()
    this.loseLeases(err)
    this.settleFirstAttempt(err)
    const ws = this.ws
    this.closing = new Promise((resolve) => {
      if (!ws || ws.readyState === WebSocket.CLOSED) return resolve()
      const force = setTimeout(() => ws.terminate(), 2000)
      force.unref()
      ws.once("close", () => {
        clearTimeout(force)
        resolve()
      })
      if (ws.readyState === WebSocket.CONNECTING) ws.terminate()
      else ws.close(1000, "client closed")
    })
    return this.closing
  }

  // --- connection life cycle -------------------------------------------------------------

  connect() {
    if (this.closed) return
    const headers = { ...(this.wsOptions.headers ?? {}) }
    if (this.token) headers.Authorization = `Bearer ${this.token}`
    let ws
    try {
      ws = new WebSocket(this.url, SUBPROTOCOL, {
        ...this.wsOptions,
        headers,
        handshakeTimeout: this.handshakeTimeoutMs,
        perMessageDeflate: false,
      })
    } catch (err) {
      this.attemptFailed(err)
      return
    }
    const socket = { ws, error: null, welcomeTimer: null }
    this.ws = ws
    this.socket = socket
    ws.on("unexpected-response", (req, res) => {
      let body = ""
      let done = false
      const finish = () => {
        if (done) return
        done = true
        clearTimeout(guard)
        socket.error ??= this.httpError(res.statusCode, body.trim())
        ws.terminate()
      }
      const guard = setTimeout(finish, 1000)
      res.setEncoding("utf8")
      res.on("data", (chunk) => {
        if (body.length < 300) body += chunk
      })
      res.on("end", finish)
      res.on("error", finish)
    })
    ws.on("open", () => {
      socket.welcomeTimer = setTimeout(() => {
        socket.error ??= new Error(`the bridge sent no welcome within ${this.handshakeTimeoutMs} ms`)
        ws.terminate()
      }, this.handshakeTimeoutMs)
    })
    ws.on("message", (data, isBinary) => this.onMessage(socket, data, isBinary))
    ws.on("ping", () => {
      this.alive = true
    })
    ws.on("pong", () => {
      this.alive = true
    })
    ws.on("error", (err) => {
      socket.error ??= err
    })
    ws.on("close", (code, reason) => this.onClose(socket, code, String(reason)))
  }

  onMessage(socket, data, isBinary) {
    if (this.closed || socket.ws !== this.ws) return
    this.alive = true
    let msg
    try {
      if (isBinary) throw new Error("binary frame")
      msg = JSON.parse(String(data))
      if (msg === null || typeof msg !== "object") throw new Error("not a JSON object")
    } catch (err) {
      socket.error ??= new Error(`the bridge sent an unreadable frame (${err.message})`)
      socket.ws.terminate()
      return
    }
    if (!this.welcome) {
      this.onWelcome(socket, msg)
      return
    }
    if (msg.type === "lease_lost") {
      this.onLeaseLost(msg)
      return
    }
    if (msg.id === undefined || msg.id === null) {
      // A reply to a frame the bridge could not read: a client bug, or an unknown event type.
      if (msg.ok === false) this.logger?.warn?.(`locking-bridge: the bridge rejected a frame: ${msg.error?.message}`)
      return
    }
    const entry = this.inflight.get(msg.id)
    if (!entry) return
    this.inflight.delete(msg.id)
    if (msg.ok === true) {
      let result = msg.result ?? {}
      try {
        if (entry.transform) result = entry.transform(result)
        entry.resolve(result)
      } catch (err) {
        entry.reject(err)
      }
    } else {
      entry.reject(bridgeError(msg.error))
    }
    this.flush()
  }

  onWelcome(socket, msg) {
    clearTimeout(socket.welcomeTimer)
    if (msg.type !== "welcome" || msg.version !== PROTOCOL_VERSION) {
      const what = msg.type === "welcome" ? `protocol version ${msg.version}` : `a "${msg.type}" message instead of a welcome`
      socket.error = lockingError(
        Types.UNEXPECTED_STATE,
        `locking-bridge: the bridge at ${this.display} sent ${what}; this client speaks protocol version ${PROTOCOL_VERSION}`,
        { bridgeCode: "protocol", fatal: true }
      )
      socket.ws.terminate()
      return
    }
    this.welcome = msg
    this.maxInFlight = msg.limits?.max_in_flight > 0 ? msg.limits.max_in_flight : 256
    // The backoff is reset only once this connection has proved stable (see the close handler):
    // a bridge that welcomes and then drops at once must not be hammered every 100 ms.
    this.connectedAt = Date.now()
    this.lastError = null
    this.fatal = null
    this.logger?.info?.(`locking-bridge: connected to the bridge at ${this.display} (namespace "${msg.namespace}")`)
    this.alive = true
    this.heartbeat = setInterval(() => {
      if (!this.alive) {
        socket.error ??= new Error(`the bridge did not answer heartbeats for ${2 * this.heartbeatIntervalMs} ms`)
        socket.ws.terminate()
        return
      }
      this.alive = false
      socket.ws.ping()
    }, this.heartbeatIntervalMs)
    this.heartbeat.unref()
    for (const entry of this.queue) {
      clearTimeout(entry.timer)
      entry.timer = null
    }
    for (const waiter of this.waiters) {
      clearTimeout(waiter.timer)
      waiter.resolve()
    }
    this.waiters.clear()
    this.settleFirstAttempt(null)
    this.flush()
  }

  onLeaseLost(msg) {
    const lease = this.leases.get(msg.lease)
    if (!lease) return
    this.leases.delete(msg.lease)
    const reason = msg.error?.message
      ? lockingError(msg.error.type || Types.CONFLICT, msg.error.message)
      : lockLost(Array.isArray(msg.keys) ? msg.keys : lease.keys)
    this.logger?.warn?.(reason.message)
    lease.lose(reason)
  }

  onClose(socket, code, reason) {
    clearTimeout(socket.welcomeTimer)
    if (socket.ws !== this.ws) return
    this.ws = null
    this.socket = null
    clearInterval(this.heartbeat)
    this.heartbeat = null
    const wasConnected = this.welcome !== null
    this.welcome = null
    if (this.closed) return
    const why = socket.error?.message ?? `closed with code ${code}${reason ? ` (${reason})` : ""}`
    this.lastError = socket.error ?? new Error(why)
    if (socket.error?.fatal) this.fatal = socket.error
    if (wasConnected) {
      if (Date.now() - this.connectedAt >= this.reconnectMaxDelayMs) this.attempt = 0
      this.logger?.warn?.(`locking-bridge: lost the connection to the bridge at ${this.display}: ${why}; reconnecting`)
      const lost = lockingError(
        Types.UNEXPECTED_STATE,
        `locking-bridge: the connection to the bridge at ${this.display} closed: ${why}`,
        { bridgeCode: "connection_lost" }
      )
      this.loseLeases(lost)
      const again = []
      for (const entry of this.inflight.values()) {
        if (entry.retry) {
          again.push(entry)
        } else {
          entry.reject(lockingError(
            Types.UNEXPECTED_STATE,
            `locking-bridge: the connection to the bridge at ${this.display} closed while "${entry.op}" was in flight (${why}); its outcome is unknown`,
            { bridgeCode: "connection_lost" }
          ))
        }
      }
      this.inflight.clear()
      this.queue.unshift(...again)
    } else {
      this.attemptFailed(this.lastError)
      if (this.closed) return
    }
    if (this.fatal) this.failAll(this.fatal)
    for (const entry of this.queue) this.armConnectWait(entry)
    this.scheduleReconnect()
  }

  attemptFailed(err) {
    this.lastError = err
    if (err?.fatal) this.fatal = err
    const first = !this.everAttempted
    this.everAttempted = true
    if ((this.attempt === 0 && (!first || this.reportFirstFailure)) || this.fatal) {
      this.logger?.warn?.(`locking-bridge: cannot connect to the bridge at ${this.display}: ${err?.message}`)
    }
    this.settleFirstAttempt(err)
    if (this.fatal) {
      for (const waiter of this.waiters) {
        clearTimeout(waiter.timer)
        waiter.reject(this.fatal)
      }
      this.waiters.clear()
    }
    if (!this.ws) this.scheduleReconnect() // new WebSocket() itself threw
  }

  scheduleReconnect() {
    if (this.closed || this.reconnectTimer) return
    const base = this.fatal
      ? this.reconnectMaxDelayMs
      : Math.min(this.reconnectMaxDelayMs, this.reconnectMinDelayMs * 2 ** Math.min(this.attempt, 30))
    this.attempt++
    const delay = base * (0.5 + Math.random() * 0.5)
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null
      this.connect()
    }, delay)
    // Keep the process alive only while someone waits for the connection.
    if (this.queue.length === 0 && this.waiters.size === 0) this.reconnectTimer.unref()
  }

  // --- requests ----------------------------------------------------------------------------

  enqueue(entry) {
    if (this.fatal && !this.welcome) {
      entry.reject(this.fatal)
      return
    }
    this.queue.push(entry)
    if (!this.welcome) {
      this.armConnectWait(entry)
      if (this.reconnectTimer) this.reconnectTimer.ref()
    }
    this.flush()
  }

  /** Starts the wait limit of a queued entry while there is no connection. */
  armConnectWait(entry) {
    if (entry.timer) return
    const started = Date.now()
    const limit = entry.deadline !== undefined ? entry.deadline - started : entry.connectWaitMs
    if (!(limit < MAX_TIMER_MS)) return // no limit
    entry.timer = setTimeout(() => {
      entry.timer = null
      const i = this.queue.indexOf(entry)
      if (i < 0) return
      this.queue.splice(i, 1)
      entry.reject(this.notConnected(Date.now() - started))
    }, Math.max(0, limit))
  }

  flush() {
    while (this.welcome && this.queue.length > 0 && this.inflight.size < this.maxInFlight) {
      const entry = this.queue.shift()
      clearTimeout(entry.timer)
      entry.timer = null
      entry.id = this.nextId++
      this.inflight.set(entry.id, entry)
      // A failed send shows up as a close event, which settles the entry.
      this.ws.send(JSON.stringify({ id: entry.id, op: entry.op, ...entry.fields }), () => {})
    }
  }

  failAll(err) {
    for (const entry of this.queue) {
      clearTimeout(entry.timer)
      entry.reject(err)
    }
    this.queue = []
    for (const waiter of this.waiters) {
      clearTimeout(waiter.timer)
      waiter.reject(err)
    }
    this.waiters.clear()
  }

  loseLeases(cause) {
    // Every key is lost; name them as the bridge does: de-duplicated and sorted.
    for (const lease of this.leases.values()) lease.lose(lockLost([...new Set(lease.keys)].sort(), cause))
    this.leases.clear()
  }

  // --- errors ------------------------------------------------------------------------------

  closedError() {
    return lockingError(Types.UNEXPECTED_STATE, "locking-bridge: the client is closed", { bridgeCode: "closed" })
  }

  notConnected(waitedMs) {
    const why = this.lastError ? `: ${this.lastError.message}` : ""
    return lockingError(
      Types.UNEXPECTED_STATE,
      `locking-bridge: no connection to the bridge at ${this.display} after waiting ${Math.round(waitedMs)} ms${why}`,
      { bridgeCode: "not_connected" }
    )
  }

  httpError(status, body) {
    const detail = body ? `: ${body}` : ""
    const fatal = FATAL_STATUSES.has(status)
    if (status === 401) {
      const hint = this.token ? `the bridge refused the token; check the "token" option` : `the bridge requires a token; set the "token" option`
      return lockingError(Types.UNAUTHORIZED, `locking-bridge: ${hint} (HTTP 401 from ${this.display}${detail})`, { bridgeCode: "unauthorized", fatal })
    }
    if (status === 403) {
      return lockingError(Types.NOT_ALLOWED, `locking-bridge: the bridge at ${this.display} refused the connection (HTTP 403${detail})`, { bridgeCode: "forbidden", fatal })
    }
    if (fatal) {
      return lockingError(
        Types.UNEXPECTED_STATE,
        `locking-bridge: ${this.display} refused the WebSocket upgrade (HTTP ${status}${detail}); is it a locktui bridge speaking protocol v${PROTOCOL_VERSION}?`,
        { bridgeCode: "refused", fatal }
      )
    }
    return new Error(`the bridge answered HTTP ${status}${detail}`)
  }
}

/** Rebuilds a bridge error reply as a (Medusa)Error; conflicts carry stock's message only. */
function bridgeError(error) {
  const type = typeof error?.type === "string" && error.type ? error.type : Types.UNEXPECTED_STATE
  const message = typeof error?.message === "string" && error.message ? error.message : "locking-bridge: the bridge reported an error without a message"
  return lockingError(type, message, type === Types.CONFLICT ? undefined : { bridgeCode: error?.code })
}

module.exports = { BridgeConnection, Lease, DEFAULTS, SUBPROTOCOL, PROTOCOL_VERSION }
