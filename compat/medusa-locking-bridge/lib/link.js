"use strict"

// One connection to the bridge (a "link"): its socket, its welcome and session, the requests in
// flight on it, its leases, its heartbeat and deadlines, and its end. What becomes of requests
// whose replies a link never delivered is lib/requests.js's business; the reconnect loop and the
// queue of new work are lib/connection.js's.

const { Types, bridgeFailure, lockingError, reasonOf } = require("./errors")
const { BridgeSocket, domainMismatch, domainOf, MAX_UTF8_PER_UNIT } = require("./socket")
const { Deadlines, heartbeatInterval, grantedAt } = require("./deadlines")
const { Ops, Events, Codes, rulesOf } = require("./protocol")

/** How many lease_lost events for unknown lease ids a link keeps for grants still to come. */
const MAX_LOST_FIRST = 64

/** send's options when none are given (no object per request). */
const COUNTED = Object.freeze({ counted: true })

/** A connection to one bridge, from the upgrade to its end. */
class Link {
  /**
   * @param {import("./connection").BridgeConnection} client
   * @param {{url: URL, display: string}} target the bridge it connects to (one of client.targets)
   */
  constructor(client, target) {
    this.client = client
    this.target = target
    /** The bridge's URL for messages, without credentials. */
    this.display = target.display
    this.state = "connecting" // connecting | open | draining | ended
    this.welcome = null
    /** The welcome's run-time rules (lib/protocol.js rulesOf): limits, heartbeat, margin, … */
    this.rules = null
    this.welcomedAt = 0
    this.inflight = new Map() // id -> entry
    this.counted = 0 // entries in flight that count toward max_in_flight
    this.leaseRequests = 0 // lease requests in flight (a grant may still come)
    this.leases = new Map() // lease id -> Lease
    this.lostFirst = new Map() // lease id -> lease_lost that came before its lease's grant
    this.deadlines = null
    this.pinger = null
    this.refusal = null
    this.socket = new BridgeSocket(
      client.socketOptions(target),
      {
        welcome: (msg) => this.onWelcome(msg),
        frame: (msg) => this.onFrame(msg),
        peerClose: (code) => this.onPeerClose(code),
        end: (error) => this.onSocketEnd(error),
      }
    )
  }

  /** The bridge's client timeout on this connection (heartbeat.timeout_ms). */
  get timeoutMs() {
    return this.rules.timeoutMs
  }

  /** The most requests that may be in flight on this connection (limits.max_in_flight); 0 before the welcome. */
  get maxInFlight() {
    return this.rules?.maxInFlight ?? 0
  }

  /** True while this link takes new work (welcomed, no going_away, not ended). */
  get takesWork() {
    return this.state === "open" && this.socket.open
  }

  /** True while requests about this link's own leases (ping, lease_release) can be sent. */
  get usable() {
    return (this.state === "open" || this.state === "draining") && this.socket.open
  }

  onWelcome(msg) {
    const rules = rulesOf(msg)
    let interval
    try {
      interval = heartbeatInterval(this.client.heartbeatIntervalMs, rules, this.display)
    } catch (err) {
      // Not usable: the client could not keep its leases certain. It holds none yet.
      this.refusal = err
      this.end(err, { close1000: true })
      return
    }
    // Every bridge of the client must be of the lock domain of the first that welcomed it.
    const mismatch = this.client.domain && domainMismatch(this.client.domain, msg, this.display)
    if (mismatch) {
      this.refusal = mismatch
      this.end(mismatch, { close1000: true })
      return
    }
    this.client.domain ??= domainOf(msg, this.display)
    this.welcome = msg
    this.rules = rules
    this.welcomedAt = performance.now()
    this.state = "open"
    this.deadlines = new Deadlines(
      { timeoutMs: rules.timeoutMs, marginMs: rules.marginMs, since: this.socket.startedAt },
      { connection: () => this.connectionExpired(), lease: (lease, why) => this.leaseExpired(lease, why) }
    )
    this.pinger = setInterval(() => this.ping(), interval)
    this.pinger.unref()
    this.client.linkWelcomed(this)
  }

  /**
   * Sends entry with a fresh id (increasing across every connection of the client); entry.build,
   * when set, makes its fields for this link. A request the welcome's rules refuse (limitProblem)
   * is never sent: it fails with its invalid_data error at once, and send returns false.
   */
  send(entry, { counted = true } = COUNTED) {
    const id = this.client.nextId++
    const op = entry.op
    const fields = entry.build ? entry.build(this) : entry.fields
    const frame = JSON.stringify({ id, op, ...fields })
    const problem = op === Ops.PING || op === Ops.RESUME ? null : this.limitProblem(op, fields, frame)
    if (problem) {
      this.client.finish(entry, problem)
      return false
    }
    entry.id = id
    entry.link = this
    entry.sent = fields
    entry.counted = counted
    this.inflight.set(id, entry)
    if (counted) this.counted++
    if (op === Ops.LEASE) this.leaseRequests++
    entry.sentAt = this.socket.send(frame)
    return true
  }

  /** Takes entry, answered, out of the requests in flight. */
  answered(entry) {
    this.inflight.delete(entry.id)
    if (entry.counted) this.counted--
    if (entry.op === Ops.LEASE) this.leaseRequests--
  }

  /**
   * Why the bridge would refuse the request op (its fields, encoded as frame) for the welcome's
   * rules, as an invalid_data error (a mistake in the caller's arguments), or null: more keys
   * than max_keys (the bridge would answer too_many_keys), an empty owner the bridge does not
   * allow (empty_owner_allowed), an expire or timeout above max_seconds (both bad_request), or a
   * frame larger than max_frame_bytes (the bridge would close the whole connection, 1009, losing
   * its leases). Pings and resumes are small by construction: send does not check them.
   */
  limitProblem(op, fields, frame) {
    const rules = this.rules
    const keys = Array.isArray(fields.keys) ? fields.keys.length : 0
    if (rules.maxKeys !== undefined && keys > rules.maxKeys) {
      return lockingError(
        Types.INVALID_DATA,
        `locking-bridge: the "${op}" request names ${keys} keys, more than the bridge at ${this.display} accepts (max_keys ${rules.maxKeys}); nothing was sent`,
        { bridgeCode: Codes.TOO_MANY_KEYS }
      )
    }
    if (fields.owner === "" && !rules.emptyOwnerAllowed) {
      return lockingError(
        Types.INVALID_DATA,
        `locking-bridge: "ownerId" must not be an empty string: the bridge at ${this.display} cannot hold locks for the empty owner (empty_owner_allowed false); pass null or undefined for the anonymous owner "*"; nothing was sent`
      )
    }
    const seconds = fields.expire > rules.maxSeconds ? "expire" : fields.timeout > rules.maxSeconds ? "timeout" : null
    if (seconds !== null) {
      return lockingError(
        Types.INVALID_DATA,
        `locking-bridge: "${seconds}" is ${fields[seconds]} seconds, more than the bridge at ${this.display} accepts (max_seconds ${rules.maxSeconds}); nothing was sent`
      )
    }
    // A frame of at most maxFrameBytes / 3 code units is small enough without counting its bytes.
    if (rules.maxFrameBytes !== undefined && frame.length * MAX_UTF8_PER_UNIT > rules.maxFrameBytes) {
      const bytes = Buffer.byteLength(frame)
      if (bytes > rules.maxFrameBytes) {
        return lockingError(
          Types.INVALID_DATA,
          `locking-bridge: the "${op}" request is ${bytes} bytes of JSON, more than the bridge at ${this.display} accepts (max_frame_bytes ${rules.maxFrameBytes}): use fewer or shorter keys, or a shorter ownerId; nothing was sent`,
          { bridgeCode: "frame_too_large" }
        )
      }
    }
    return null
  }

  ping() {
    if (!this.usable) return
    this.send({ op: Ops.PING, fields: {}, internal: true }, { counted: false })
  }

  onFrame(msg) {
    if (this.state === "ended") return
    if (msg.type === Events.LEASE_LOST) return this.onLeaseLost(msg)
    if (msg.type === Events.GOING_AWAY) return this.onGoingAway(msg)
    if (msg.id === undefined || msg.id === null) {
      // A reply to a frame the bridge could not read: a client bug, or an unknown event type.
      this.client.logger?.warn?.(`locking-bridge: the bridge sent ${msg.ok === false ? `an error for an unreadable frame: ${msg.error?.message}` : `an unknown message "${msg.type}"`}`)
      return
    }
    const entry = this.inflight.get(msg.id)
    if (!entry) return
    this.answered(entry)
    // The bridge received the request after it was sent: its timeout runs from later than that.
    this.deadlines.answered(entry.sentAt)
    if (entry.op === Ops.PING) this.pinged(entry, msg)
    else this.client.requests.reply(entry, msg, this)
    this.client.flush()
  }

  /** A ping reply: {leases: {id: valid_ms}} extends each lease's own deadline. */
  pinged(entry, msg) {
    const valid = msg.ok === true ? msg.result?.leases : null
    if (!valid || typeof valid !== "object") return
    for (const [id, ms] of Object.entries(valid)) {
      const lease = this.leases.get(id)
      if (lease) this.deadlines.valid(lease, entry.sentAt, ms)
    }
  }

  /** Registers a lease granted by a reply to a request sent at sentAt, valid validMs after the bridge's wait of waitedMs. */
  addLease(lease, sentAt, validMs, waitedMs) {
    this.leases.set(lease.id, lease)
    this.deadlines.valid(lease, grantedAt(sentAt, waitedMs), validMs)
  }

  /**
   * The bridge lost the lease. Once the signal has aborted, lease_release tells the bridge that
   * this client no longer believes it holds the keys the lease still has: the bridge keeps them
   * until then (or until the lease's deadline), and releases them now.
   */
  onLeaseLost(msg) {
    const lease = this.leases.get(msg.lease)
    if (!lease) {
      // Lost before its grant was read (a bridge that wrote them in that order): the grant must
      // not be believed. Otherwise a lease this client gave back already: nothing to do.
      if (this.awaitsLease()) {
        this.lostFirst.set(msg.lease, msg)
        // Such an event comes right before its grant; older ones are for leases given back.
        if (this.lostFirst.size > MAX_LOST_FIRST) this.lostFirst.delete(this.lostFirst.keys().next().value)
      }
      return
    }
    this.forget(lease)
    const reason = msg.error?.message ? this.client.bridgeError(msg.error) : undefined
    lease.lose({ reason, cause: reason ? undefined : new Error("the bridge reported the lease lost") })
    this.client.logger?.warn?.(lease.reason.message)
    if (this.usable) this.send({ op: Ops.LEASE_RELEASE, fields: { lease: lease.id }, internal: true })
  }

  /** True while a lease request is in flight on this link (a grant may still come). */
  awaitsLease() {
    return this.leaseRequests > 0
  }

  /**
   * Takes the lease_lost that came before the grant of lease id, if one did; forgets the rest
   * once no lease request is in flight, since no grant can match them any more.
   */
  takeLostFirst(id) {
    if (this.lostFirst.size === 0) return undefined
    const msg = this.lostFirst.get(id)
    this.lostFirst.delete(id)
    this.leaseAnswered()
    return msg
  }

  /** A lease request was answered: with none left in flight, no kept lease_lost can match a grant. */
  leaseAnswered() {
    if (!this.awaitsLease()) this.lostFirst.clear()
  }

  /** going_away: no new work here; leases end at the drain deadline; new work goes to a new connection. */
  onGoingAway(msg) {
    if (this.state !== "open") return
    this.state = "draining"
    const drainMs = Number.isFinite(msg.drain_ms) && msg.drain_ms > 0 ? msg.drain_ms : 0
    this.deadlines.drain(drainMs)
    this.client.logger?.info?.(`locking-bridge: the bridge at ${this.display} is shutting down (drain ${drainMs} ms); new work goes to a new connection`)
    this.client.linkDraining(this)
  }

  /** A shutting_down reply: the bridge takes no new work here even if going_away is not in yet. */
  stopTakingWork() {
    if (this.state !== "open") return
    this.state = "draining"
    this.client.linkDraining(this)
  }

  /** A lease's own deadline (or the drain deadline) passed: it is lost; give its keys back. */
  leaseExpired(lease, why) {
    if (!this.leases.has(lease.id)) return
    const cause =
      why === "drain"
        ? bridgeFailure(Codes.SHUTTING_DOWN, `locking-bridge: the bridge at ${this.display} is shutting down and the lease was not released before the end of its drain`)
        : bridgeFailure("lease_deadline", `locking-bridge: no renewal of the lease was confirmed by the bridge at ${this.display} before its deadline`)
    lease.lose({ cause })
    this.client.logger?.warn?.(`${lease.reason.message} (${cause.message})`)
    this.releaseLease(lease).catch(() => {})
  }

  /** No request was answered for timeoutMs − margin: every lease is lost; then close with 1000. */
  connectionExpired() {
    const waited = Math.round(performance.now() - this.deadlines.proof)
    const cause = bridgeFailure(
      "heartbeat_timeout",
      `locking-bridge: the bridge at ${this.display} answered nothing sent in the last ${waited} ms (its client timeout is ${this.timeoutMs} ms), so the connection's leases are no longer certain`
    )
    this.end(cause, { close1000: true })
  }

  /** Stops the renewal of lease and releases its keys; false when the bridge no longer has it. */
  releaseLease(lease) {
    this.forget(lease)
    if (!this.usable) return Promise.resolve(false)
    return new Promise((resolve, reject) => {
      this.send({ op: Ops.LEASE_RELEASE, fields: { lease: lease.id }, resolve, reject })
    })
  }

  forget(lease) {
    this.leases.delete(lease.id)
    this.deadlines?.forget(lease)
  }

  /**
   * Ends the link for cause: every lease is lost first, then (close1000) the socket is closed
   * with 1000, which tells the bridge this client holds none of them. The requests still in
   * flight go to the client, which learns their outcome on its next connection.
   */
  end(cause, { close1000 = false } = {}) {
    if (this.state === "ended") return
    const wasOpen = this.welcome !== null
    this.state = "ended"
    clearInterval(this.pinger)
    this.deadlines?.stop()
    for (const lease of this.leases.values()) lease.lose({ cause })
    this.leases.clear()
    if (close1000) this.socket.close(1000, "client holds no lease")
    else this.socket.terminate(cause)
    const orphans = [...this.inflight.values()]
    this.inflight.clear()
    this.counted = 0
    this.leaseRequests = 0
    this.client.linkEnded(this, cause, orphans, wasOpen)
  }

  /** The bridge is closing the connection: its leases are lost before the close is answered. */
  onPeerClose(code) {
    const cause = bridgeFailure("connection_lost", `locking-bridge: the bridge at ${this.display} closed the connection (code ${code})`)
    for (const lease of this.leases.values()) lease.lose({ cause })
  }

  onSocketEnd(error) {
    if (this.state !== "ended") {
      const why = this.refusal ?? error ?? new Error("the connection closed")
      const cause = this.welcome
        ? bridgeFailure("connection_lost", `locking-bridge: the connection to the bridge at ${this.display} closed: ${reasonOf(why)}`)
        : why
      this.end(cause)
    }
    this.client.linkGone(this)
  }
}

module.exports = { Link }
