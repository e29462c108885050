"use strict"

// The client of a locktui bridge (protocol v3): one connection at a time takes new work (one that
// drains finishes its jobs meanwhile), kept open with reconnects until close(): to the next
// bridge URL at once when there are several (lib/rotation.js), with jittered exponential backoff
// once every URL of a round failed. Every bridge must be of the lock domain (namespace, token
// restrictions) of the first that welcomed the client.
//
// * Calls made while disconnected wait for a connection, each up to its own limit.
// * Requests whose connection ended before their reply are resumed on the next connection
//   (lib/requests.js): nothing is sent twice blindly.
// * Leases belong to their connection (lib/link.js): their signals abort as soon as the client
//   stops being certain of them, never later than the bridge could free their keys.

const crypto = require("node:crypto")
const { bridgeFailure, bridgeError, reasonOf } = require("./errors")
const { Link } = require("./link")
const { Requests } = require("./requests")
const { Rotation } = require("./rotation")
const { DEFAULTS, MAX_TIMER_MS, parseUrls, msOption, clientHello } = require("./options")
const { Ops } = require("./protocol")

/** A fresh acquire claim: 32 hex digits. */
function newClaim() {
  return crypto.randomBytes(16).toString("hex")
}

/** enqueue's options when none are given (no object per request). */
const BACK = Object.freeze({ front: false })

/**
 * The fields of a lease request (an entry of BridgeConnection.lease, `this`) sent on link: the
 * time left until the entry's deadline, at most the bridge's max_seconds.
 */
function leaseFields(link) {
  return {
    keys: this.keys,
    timeout: Math.min(Math.max(this.deadline - performance.now(), 1) / 1000, link.rules.maxSeconds),
    expire: this.expire,
  }
}

/** The client of its bridges: the calls' queue, the connections and the reconnect loop. */
class BridgeConnection {
  /**
   * @param {object} options url (one URL, an array, or URLs separated by commas), token, logger,
   *   wsOptions and the *Ms tuning options (DEFAULTS).
   */
  constructor(options) {
    /** The bridges, in the order the client tries them: [{url, display}]. */
    this.targets = parseUrls(options.url)
    /** The bridge URLs for messages, without credentials. */
    this.display = this.targets.map((t) => t.display).join(", ")
    this.rotation = new Rotation(this.targets)
    if (options.token !== undefined && options.token !== null && (typeof options.token !== "string" || options.token === "")) {
      throw new Error(`locking-bridge: the "token" option must be a non-empty string`)
    }
    this.token = options.token || undefined
    for (const name of Object.keys(DEFAULTS)) this[name] = msOption(options, name)
    this.wsOptions = options.wsOptions ?? {}
    this.hello = clientHello(options)
    this.logger = options.logger
    // The Medusa loader reports the first attempt itself, as locking-redis does.
    this.reportFirstFailure = options.reportFirstFailure !== false

    this.nextId = 1 // request ids: increasing integers across every connection
    this.links = new Set() // every link whose socket is not gone yet
    this.connecting = null // the link being opened
    this.current = null // the welcomed link that takes new work
    this.queue = [] // entries waiting for a current link (or for a free in-flight slot)
    this.waiters = new Set() // ready() calls
    this.requests = new Requests(this)
    this.closed = false
    this.closing = null
    this.attempt = 0
    this.lastError = null // why the last attempt failed or the last connection ended
    this.lastErrorAt = null // the URL of that attempt or connection
    this.fatal = null // an error no reconnect fixes by itself (bad token, not a v2 bridge)
    /** The lock domain of the first welcome (lib/socket.js domainOf); every later one must match it. */
    this.domain = null
    this.reconnectTimer = null
    this.connect()
  }

  /**
   * Settles once the first round of attempts is over: at the first welcome, or once every URL
   * failed once (see Rotation). Resolves {welcomed: target or null, failures: [{target, error}]}.
   */
  get firstRound() {
    return this.rotation.firstRound
  }

  /** The options of a BridgeSocket to target (its URL with this client's token and options). */
  socketOptions(target) {
    return {
      url: target.url,
      display: target.display,
      token: this.token,
      wsOptions: this.wsOptions,
      hello: this.hello,
      handshakeTimeoutMs: this.handshakeTimeoutMs,
    }
  }

  /** True while a welcomed connection takes new work. */
  get connected() {
    return this.current !== null
  }

  /** Requests sent and not answered yet, on every connection (pings and resumes excluded). */
  get inflightCount() {
    let n = 0
    for (const link of this.links) n += link.counted
    return n
  }

  /**
   * Resolves when a connection is up (at once if it is). Rejects after timeoutMs (default
   * connectTimeoutMs), at once when the bridge refused the client for good (bad token, a
   * heartbeatIntervalMs it cannot work with), or when the client is closed.
   */
  ready(timeoutMs = this.connectTimeoutMs) {
    if (this.closed) return Promise.reject(this.closedError())
    if (this.current) return Promise.resolve()
    if (this.fatal) return Promise.reject(this.fatal)
    return new Promise((resolve, reject) => {
      const waiter = { resolve, reject, timer: null }
      const started = performance.now()
      if (timeoutMs < MAX_TIMER_MS) {
        waiter.timer = setTimeout(() => {
          this.waiters.delete(waiter)
          reject(this.notConnected(performance.now() - started))
        }, timeoutMs)
      }
      this.waiters.add(waiter)
    })
  }

  /**
   * Sends one request and resolves with its result, or rejects with the bridge's error rebuilt
   * as a (Medusa)Error of the same type and message.
   *
   * @param {string} op Ops.ACQUIRE, Ops.RELEASE or Ops.RELEASE_ALL
   * @param {object} fields the op's fields (an acquire gets a fresh claim at every send)
   * @param {{waitMs?: number}} [opts] how long to wait for a connection (default connectTimeoutMs; Infinity: no limit)
   */
  request(op, fields, opts = {}) {
    if (this.closed) return Promise.reject(this.closedError())
    return new Promise((resolve, reject) => {
      const entry = { op, fields, waitMs: opts.waitMs ?? this.connectTimeoutMs, resolve, reject }
      if (op === Ops.ACQUIRE) entry.build = () => ({ ...fields, claim: newClaim() })
      this.enqueue(entry)
    })
  }

  /**
   * Takes a lease on keys; resolves with a Lease. The request is sent again after a lost
   * connection as long as deadline (performance.now() time, Infinity for none) allows, each time
   * with the time left, at most the max_seconds of the bridge it goes to.
   */
  lease(keys, expireSeconds, deadline) {
    if (this.closed) return Promise.reject(this.closedError())
    return new Promise((resolve, reject) => {
      this.enqueue({ op: Ops.LEASE, keys, expire: expireSeconds, deadline, build: leaseFields, resolve, reject })
    })
  }

  /**
   * Closes the client for good: running jobs' signals abort, then every connection closes with
   * 1000 (the bridge frees its leases at once); pending calls reject; no more reconnects.
   */
  close() {
    if (this.closing) return this.closing
    this.closed = true
    clearTimeout(this.reconnectTimer)
    this.reconnectTimer = null
    const err = this.closedError()
    for (const entry of this.queue.splice(0)) this.finish(entry, err)
    for (const waiter of this.waiters) {
      clearTimeout(waiter.timer)
      waiter.reject(err)
    }
    this.waiters.clear()
    this.requests.failAll(err)
    this.rotation.abandon(err)
    const links = [...this.links]
    for (const link of links) link.end(err, { close1000: true })
    this.closing = Promise.all(links.map((link) => link.gone)).then(() => {})
    return this.closing
  }

  // --- connections -------------------------------------------------------------------------

  /** Opens a connection to the bridge the rotation names next. */
  connect() {
    if (this.closed || this.connecting) return
    const link = new Link(this, this.rotation.next())
    link.gone = new Promise((resolve) => (link.markGone = resolve))
    this.links.add(link)
    this.connecting = link
  }

  /** A link got its welcome: it takes new work; resumes go first. */
  linkWelcomed(link) {
    if (this.connecting === link) this.connecting = null
    if (this.closed) {
      link.end(this.closedError(), { close1000: true })
      return
    }
    this.current = link
    this.lastError = null
    this.lastErrorAt = null
    this.fatal = null
    this.rotation.welcomed()
    this.logger?.info?.(`locking-bridge: connected to the bridge at ${link.display} (namespace "${link.welcome.namespace}")`)
    for (const entry of this.queue) {
      clearTimeout(entry.waitTimer)
      entry.waitTimer = null
    }
    for (const waiter of this.waiters) {
      clearTimeout(waiter.timer)
      waiter.resolve()
    }
    this.waiters.clear()
    this.requests.resumeAll()
    this.flush()
    this.requests.settleDue()
  }

  /**
   * A link got going_away (or a shutting_down reply): new work waits for another connection, to
   * the next bridge at once when there are several (a stopping bridge refuses upgrades).
   */
  linkDraining(link) {
    if (this.current !== link) return
    this.current = null
    for (const entry of this.queue) this.armWait(entry)
    this.moveOn(link)
  }

  /** A link ended (its leases are already lost); orphans are the requests it never answered. */
  linkEnded(link, cause, orphans, wasOpen) {
    if (this.connecting === link) this.connecting = null
    const wasCurrent = this.current === link
    if (wasCurrent) this.current = null
    if (this.closed) {
      // Leases of a closed connection are freed by the bridge: nothing was left to give back.
      // An acquire or release cut off may have run: its outcome is unknown.
      for (const entry of orphans) this.finish(entry, entry.op === Ops.LEASE_RELEASE ? null : this.requests.unknownBecause(entry, this.closedError()), false)
      return
    }
    if (!wasOpen) {
      this.attemptFailed(cause, link)
      return
    }
    this.lastError = cause
    this.lastErrorAt = link.display
    if (this.provedStable(link)) this.attempt = 0
    this.logger?.warn?.(`locking-bridge: lost the connection to the bridge at ${link.display}: ${cause.message}; reconnecting`)
    this.requests.orphaned(link, orphans)
    if (wasCurrent) {
      for (const entry of this.queue) this.armWait(entry)
      this.moveOn(link)
    } else if (!this.current) {
      this.scheduleReconnect()
    }
    this.keepAlive() // a timer scheduled earlier (another link ended) now has orphans to wait for
  }

  /**
   * True when link's connection lasted long enough (reconnectMaxDelayMs) to count as a working
   * bridge: its end resets the backoff and starts a new round of URLs. A bridge that welcomes
   * and drops at once never does, so it is not hammered.
   */
  provedStable(link) {
    return performance.now() - link.welcomedAt >= this.reconnectMaxDelayMs
  }

  /**
   * The current connection (link) ended or drains: connects to the next bridge of the round at
   * once, or after the backoff once the round is over (always, with one URL).
   */
  moveOn(link) {
    this.scheduleReconnect({ atOnce: this.rotation.ended(this.provedStable(link)) })
  }

  /** The link's socket is gone. */
  linkGone(link) {
    this.links.delete(link)
    link.markGone()
  }

  /**
   * An attempt to connect to link's bridge failed (err): the next bridge of the round is tried
   * at once; once the round is over the client backs off, and when an error of the round was
   * fatal (a refused token, not a bridge) every waiting and new call fails with it at once. The
   * client's own settles stay queued until a bridge welcomes it (or close()): the acquires they
   * serve may hold their keys, and their own limits apply.
   */
  attemptFailed(err, link) {
    this.lastError = err
    this.lastErrorAt = link.display
    const firstRound = !this.rotation.firstSettled
    const { atOnce, fatal } = this.rotation.failed(err)
    if (fatal) this.fatal = fatal
    if ((this.attempt === 0 && (!firstRound || this.reportFirstFailure)) || this.fatal) {
      this.logger?.warn?.(`locking-bridge: cannot connect to the bridge at ${link.display}: ${reasonOf(err)}`)
    }
    if (this.fatal) {
      for (const waiter of this.waiters) {
        clearTimeout(waiter.timer)
        waiter.reject(this.fatal)
      }
      this.waiters.clear()
      const kept = []
      for (const entry of this.queue.splice(0)) {
        if (entry.internal) kept.push(entry)
        else this.finish(entry, this.fatal)
      }
      this.queue.push(...kept)
    }
    this.scheduleReconnect({ atOnce })
  }

  /**
   * Schedules the next attempt: atOnce (the next bridge of a round) on the next turn of the event
   * loop, else after the backoff: reconnectMinDelayMs doubled per attempt up to
   * reconnectMaxDelayMs (that cap while a fatal error stands), jittered to 50-100 %. Either way
   * through a timer that keepAlive refs only while a call waits for the connection.
   */
  scheduleReconnect({ atOnce = false } = {}) {
    if (this.closed || this.reconnectTimer || this.connecting) return
    let delay = 0
    if (!atOnce) {
      const base = this.fatal
        ? this.reconnectMaxDelayMs
        : Math.min(this.reconnectMaxDelayMs, this.reconnectMinDelayMs * 2 ** Math.min(this.attempt, 30))
      this.attempt++
      delay = base * (0.5 + Math.random() * 0.5)
    }
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null
      this.connect()
    }, delay)
    this.keepAlive()
  }

  /**
   * True while a call waits for the next connection: a request queued, a ready() call, or a
   * request whose connection ended before its reply and which awaits its outcome there (a resume
   * or a settle).
   */
  awaitsConnection() {
    return this.queue.length > 0 || this.waiters.size > 0 || this.requests.pending
  }

  /**
   * The reconnect timer keeps the process alive exactly while a call waits for the connection
   * (awaitsConnection): Node must not exit with a promise that a reconnect would settle, and an
   * idle client must not hold a process open. Called whenever one of those may have changed
   * while the timer runs.
   */
  keepAlive() {
    if (!this.reconnectTimer) return
    if (this.awaitsConnection()) this.reconnectTimer.ref()
    else this.reconnectTimer.unref()
  }

  // --- the queue ---------------------------------------------------------------------------

  /** Queues entry for the current link (front: before the new work). */
  enqueue(entry, { front = false } = BACK) {
    if (this.closed) return this.finish(entry, this.closedError())
    if (this.fatal && !this.current && !entry.internal) return this.finish(entry, this.fatal)
    if (front) this.queue.unshift(entry)
    else this.queue.push(entry)
    if (!this.current) {
      this.armWait(entry)
      this.keepAlive()
    }
    this.flush()
  }

  /** Starts the wait limit of a queued entry while there is no connection taking work. */
  armWait(entry) {
    if (entry.waitTimer) return
    const started = performance.now()
    const limit = entry.deadline !== undefined ? entry.deadline - started : entry.waitMs
    if (!(limit < MAX_TIMER_MS)) return // no limit
    entry.waitTimer = setTimeout(() => {
      entry.waitTimer = null
      const i = this.queue.indexOf(entry)
      if (i < 0) return
      this.queue.splice(i, 1)
      this.finish(entry, this.notConnected(performance.now() - started))
    }, Math.max(0, limit))
  }

  flush() {
    const link = this.current
    while (link?.takesWork && this.queue.length > 0 && link.counted < link.maxInFlight) {
      const entry = this.queue.shift()
      clearTimeout(entry.waitTimer)
      entry.waitTimer = null
      if (entry.done || entry.acquire?.done) continue // given up on while queued
      link.send(entry) // fails the entry at once instead when it exceeds the welcome's limits
    }
  }

  /** Settles a request's promise once (internal entries pass errors on to what they serve). */
  finish(entry, err, result) {
    if (entry.done) return
    entry.done = true
    clearTimeout(entry.waitTimer)
    clearTimeout(entry.orphanTimer)
    // A settle or a resume that fails leaves the outcome of the requests it serves unknown.
    if (entry.op === Ops.SETTLE) {
      if (err) this.finish(entry.acquire, this.requests.unknownBecause(entry.acquire, err))
      return
    }
    if (entry.op === Ops.RESUME) {
      if (err) for (const inner of entry.group.entries.values()) this.finish(inner, this.requests.unknownBecause(inner, err))
      return
    }
    if (entry.internal) return
    if (err) entry.reject(err)
    else entry.resolve(result)
  }

  // --- errors ------------------------------------------------------------------------------

  bridgeError(error) {
    return bridgeError(error)
  }

  /** The error of a call made on (or cut off by) a closed client. */
  closedError() {
    return bridgeFailure("closed", "locking-bridge: the client is closed")
  }

  /** The error of a call that waited waitedMs for a connection in vain; it names the last failure and its URL. */
  notConnected(waitedMs) {
    const several = this.targets.length > 1
    const where = several ? `any of the bridges at ${this.display}` : `the bridge at ${this.display}`
    let why = ""
    if (this.lastError) why = several ? `; the last error, at ${this.lastErrorAt}: ${reasonOf(this.lastError)}` : `: ${reasonOf(this.lastError)}`
    return bridgeFailure("not_connected", `locking-bridge: no connection to ${where} after waiting ${Math.round(waitedMs)} ms${why}`)
  }
}

module.exports = { BridgeConnection, DEFAULTS }
