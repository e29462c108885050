"use strict"

// The life of one WebSocket to the bridge: the upgrade (and what a refused one means), the
// welcome (checked against the protocol version of lib/protocol.js), JSON frames in and out, and its end. It knows nothing
// about requests or leases; lib/link.js does.

const WebSocket = require("ws")
const { bridgeFailure, oneLine } = require("./errors")
const { SUBPROTOCOL, PROTOCOL_VERSION, CLIENT_HEADER, Events, rulesProblem, rulesOf } = require("./protocol")

/** HTTP statuses of a refused upgrade that no retry fixes by itself. */
const FATAL_STATUSES = new Set([400, 401, 403, 404])
/** The largest number of UTF-8 bytes one UTF-16 code unit of a string encodes to. */
const MAX_UTF8_PER_UNIT = 3
/** How long a close handshake may take before the socket is destroyed. */
const CLOSE_GRACE_MS = 1000

/**
 * One WebSocket to the bridge. Calls handlers.welcome(msg) once the bridge's welcome arrived
 * and passed the checks, handlers.frame(msg) for every later JSON object, handlers.peerClose(code)
 * when the bridge starts a close handshake (before it is answered), and handlers.end(error)
 * exactly once when the socket is gone (error: why, or null after a close() of ours).
 */
class BridgeSocket {
  /**
   * @param {{url: URL, display: string, token?: string, wsOptions: object, hello?: string, handshakeTimeoutMs: number}} options
   * @param {{welcome(msg: object): void, frame(msg: object): void, peerClose(code: number): void, end(error: Error|null, code?: number): void}} handlers
   */
  constructor(options, handlers) {
    this.display = options.display
    this.token = options.token
    this.handlers = handlers
    this.error = null
    this.welcomed = false
    this.closing = false
    this.ended = false
    /** performance.now() of the upgrade request, then of the last frame sent. */
    this.startedAt = performance.now()
    this.lastSentAt = this.startedAt
    const headers = { ...(options.wsOptions.headers ?? {}) }
    if (options.token) headers.Authorization = `Bearer ${options.token}`
    if (options.hello) headers[CLIENT_HEADER] = options.hello
    try {
      this.ws = new WebSocket(options.url, SUBPROTOCOL, {
        ...options.wsOptions,
        headers,
        handshakeTimeout: options.handshakeTimeoutMs,
        perMessageDeflate: false,
      })
    } catch (err) {
      this.ws = null
      setImmediate(() => this.finish(err))
      return
    }
    const ws = this.ws
    // ws answers a close frame of the bridge by closing with the bridge's code, and a 1000 from
    // the client tells the bridge that the client holds none of the connection's leases: the
    // handler loses them before that frame can go out.
    const wsClose = ws.close.bind(ws)
    ws.close = (code, reason) => {
      if (!this.closing) {
        this.closing = true
        this.peerCode = code ?? 1005
        handlers.peerClose(this.peerCode)
      }
      return wsClose(code, reason)
    }
    // ws answers the bridge's pings with pongs, which the bridge counts as frames received.
    ws.on("ping", () => {
      this.lastSentAt = performance.now()
    })
    ws.on("unexpected-response", (req, res) => this.refused(res))
    ws.on("open", () => {
      this.welcomeTimer = setTimeout(() => {
        this.terminate(new Error(`the bridge sent no welcome within ${options.handshakeTimeoutMs} ms`))
      }, options.handshakeTimeoutMs)
    })
    ws.on("message", (data, isBinary) => this.onMessage(data, isBinary))
    ws.on("error", (err) => {
      this.error ??= err
    })
    ws.on("close", (code, reason) => {
      const why = String(reason)
      const ours = this.closing && this.peerCode === undefined
      this.finish(ours ? null : this.error ?? new Error(`closed with code ${code}${why ? ` (${why})` : ""}`), code)
    })
  }

  /** True while frames can be sent. */
  get open() {
    return !this.closing && !this.ended && this.ws?.readyState === WebSocket.OPEN
  }

  /**
   * Sends one request, a JSON text (or an object to encode); returns its send time
   * (performance.now()): it leaves at the end of the tick at the latest, so deadlines counted
   * from this time are early, never late. The requests sent in one tick leave together, in order,
   * as one batch frame (a JSON array; one request alone as it is), in as few frames as the
   * bridge's max_frame_bytes allows. A failed send ends the socket.
   */
  send(frame) {
    const at = performance.now()
    this.lastSentAt = at
    const text = typeof frame === "string" ? frame : JSON.stringify(frame)
    if (this.batch === undefined) {
      this.batch = [text]
      this.batchUnits = text.length
      process.nextTick(this.flushBatch)
      return at
    }
    // A batch of at most maxFrameBytes / 3 code units is small enough without counting its bytes.
    if (this.maxFrameBytes !== undefined && (this.batchUnits + text.length + 2) * MAX_UTF8_PER_UNIT > this.maxFrameBytes) {
      this.writeBatch()
      this.batch = []
      this.batchUnits = 0
    }
    this.batch.push(text)
    this.batchUnits += text.length + 1
    return at
  }

  /** Sends the batch of this tick, if any (bound: it runs from process.nextTick). */
  flushBatch = () => {
    if (this.batch === undefined) return
    this.writeBatch()
    this.batch = undefined
  }

  /**
   * Writes the batch as one frame. A batch is dropped when the socket is no longer open: its
   * requests are still in flight on the link, which settles them when the connection ends
   * (resumed on the next connection, or failed with an unknown outcome), never by this write.
   */
  writeBatch() {
    const batch = this.batch
    if (batch.length === 0 || this.ended || this.ws.readyState !== WebSocket.OPEN) return
    this.ws.send(batch.length === 1 ? batch[0] : `[${batch.join(",")}]`, () => {})
  }

  /** Closes with code (1000: this client holds none of the connection's leases); destroys the socket if the handshake stalls. */
  close(code = 1000, reason = "") {
    if (this.closing || this.ended || !this.ws) return
    this.flushBatch() // what was sent before the close goes before it
    this.closing = true
    clearTimeout(this.welcomeTimer)
    if (this.ws.readyState === WebSocket.CONNECTING) {
      this.ws.terminate()
      return
    }
    this.ws.close(code, reason)
    setTimeout(() => this.ws.terminate(), CLOSE_GRACE_MS).unref()
  }

  /** Destroys the socket at once, for error. */
  terminate(error) {
    this.error ??= error
    this.ws?.terminate()
  }

  finish(error, code) {
    if (this.ended) return
    this.ended = true
    clearTimeout(this.welcomeTimer)
    this.handlers.end(error, code)
  }

  /** A frame of the bridge: the welcome, then replies and events, one or a batch (a JSON array) each. */
  onMessage(data, isBinary) {
    if (this.closing || this.ended) return
    let msg
    try {
      if (isBinary) throw new Error("binary frame")
      msg = JSON.parse(String(data))
      if (msg === null || typeof msg !== "object") throw new Error("not a JSON object")
      if (Array.isArray(msg) && (!this.welcomed || msg.some((m) => m === null || typeof m !== "object" || Array.isArray(m)))) {
        throw new Error(this.welcomed ? "a batch of something else than JSON objects" : "a batch instead of a welcome")
      }
    } catch (err) {
      this.terminate(new Error(`the bridge sent an unreadable frame (${err.message})`))
      return
    }
    if (Array.isArray(msg)) {
      for (const m of msg) {
        if (this.closing || this.ended) return
        this.handlers.frame(m)
      }
      return
    }
    if (this.welcomed) {
      this.handlers.frame(msg)
      return
    }
    clearTimeout(this.welcomeTimer)
    const problem = welcomeProblem(msg)
    if (problem) {
      this.terminate(
        bridgeFailure(
          "protocol",
          oneLine(`locking-bridge: the bridge at ${this.display} sent ${problem}; this client speaks protocol version ${PROTOCOL_VERSION}`),
          { fatal: true }
        )
      )
      return
    }
    this.welcomed = true
    this.maxFrameBytes = rulesOf(msg).maxFrameBytes
    this.handlers.welcome(msg)
  }

  /** A refused upgrade: reads a little of the body for the message, then ends the socket. */
  refused(res) {
    let body = ""
    let done = false
    const finish = () => {
      if (done) return
      done = true
      clearTimeout(guard)
      this.error ??= this.httpError(res.statusCode, body.trim())
      this.ws.terminate()
    }
    const guard = setTimeout(finish, 1000)
    res.setEncoding("utf8")
    res.on("data", (chunk) => {
      if (body.length < 300) body += chunk
    })
    res.on("end", finish)
    res.on("error", finish)
  }

  /**
   * The error of an upgrade refused with HTTP status (body: the start of the response's body),
   * on one line, naming the URL and the option to check. 400, 401, 403 and 404 are fatal: no
   * retry fixes them by themselves.
   */
  httpError(status, body) {
    const text = oneLine(body).slice(0, 200)
    const detail = text ? `: ${text}` : ""
    const fatal = FATAL_STATUSES.has(status)
    if (status === 401) {
      const what = this.token ? `refused the token (HTTP 401${detail}); check the "token" option` : `requires a token (HTTP 401${detail}); set the "token" option`
      return bridgeFailure("unauthorized", `locking-bridge: the bridge at ${this.display} ${what}`, { fatal })
    }
    if (status === 403) {
      return bridgeFailure("forbidden", `locking-bridge: the bridge at ${this.display} refused the connection (HTTP 403${detail})`, { fatal })
    }
    if (fatal) {
      return bridgeFailure(
        "refused",
        `locking-bridge: ${this.display} refused the WebSocket upgrade (HTTP ${status}${detail}); is it a locktui bridge speaking protocol v${PROTOCOL_VERSION}? Check the "url" option`,
        { fatal }
      )
    }
    return new Error(`the bridge answered HTTP ${status}${detail}`)
  }
}

/** Why msg is not a usable welcome of this protocol version, or null. */
function welcomeProblem(msg) {
  if (msg.type !== Events.WELCOME) return `a "${msg.type}" message instead of a welcome`
  if (msg.version !== PROTOCOL_VERSION) return `protocol version ${msg.version}`
  const problem = rulesProblem(msg)
  if (problem) return problem
  if (typeof msg.session !== "string" || msg.session === "") return "a welcome without a session"
  return null
}

/**
 * Why the bridge that sent welcome (at display) is not of the lock domain of the first bridge
 * that welcomed the client (first: {display, namespace, owner_prefix, key_prefix}, from its
 * welcome), as a fatal error, or null. Its locks would not exclude those taken through the
 * first one (another namespace), or the same calls would fail there and not at the first (other
 * token restrictions). owner_prefix and key_prefix are compared when both welcomes carry them.
 */
function domainMismatch(first, welcome, display) {
  if (welcome.namespace !== first.namespace) {
    return bridgeFailure(
      "namespace_mismatch",
      oneLine(`locking-bridge: the bridge at ${display} serves the lock namespace ${JSON.stringify(welcome.namespace)}, but the bridge at ${first.display} serves ${JSON.stringify(first.namespace)}: locks taken through one would not exclude those taken through the other, so the client does not use it; every URL of the "url" option must be a bridge of the same namespace (--namespace) on the same Redis; check the "url" option`),
      { fatal: true }
    )
  }
  const differs = ["owner_prefix", "key_prefix"].filter((f) => typeof welcome[f] === "string" && typeof first[f] === "string" && welcome[f] !== first[f])
  if (differs.length > 0) {
    const of = (w) => differs.map((f) => `${f} ${JSON.stringify(w[f])}`).join(" and ")
    return bridgeFailure(
      "prefix_mismatch",
      oneLine(`locking-bridge: the bridge at ${display} restricts the token to ${of(welcome)}, but the bridge at ${first.display} to ${of(first)}: calls would fail at one and not at the other, so the client does not use it; every URL of the "url" option must accept the "token" option with the same restrictions`),
      { fatal: true }
    )
  }
  return null
}

/** The lock domain of a welcome from the bridge at display, for domainMismatch. */
function domainOf(welcome, display) {
  return { display, namespace: welcome.namespace, owner_prefix: welcome.owner_prefix, key_prefix: welcome.key_prefix }
}

module.exports = { BridgeSocket, domainMismatch, domainOf, MAX_UTF8_PER_UNIT }
