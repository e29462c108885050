"use strict"

// When a connection's leases stop being certain, on the client's own clock (performance.now()),
// whatever the network does (docs/bridge-protocol.md, "Heartbeats and lease deadlines"):
//
// * the connection: every lease of it is lost at (send time of the latest request the bridge
//   answered, a ping or the lease request itself) + timeout_ms − margin, margin the welcome's
//   heartbeat.margin_ms (lib/protocol.js rulesOf). The bridge received that request after it was
//   sent and never frees the connection's leases before timeout_ms after the last frame it
//   received;
// * each lease: lost at (send time of a request) + valid_ms, the latest among its answered
//   `lease` and `ping` requests, so the holder stops believing no later than the bridge does
//   (for the `lease` request, the send time plus the bridge's wait for the keys: grantedAt);
// * a draining connection (going_away): every lease is lost at receipt + drain_ms − margin.

const { bridgeFailure } = require("./errors")

/**
 * The moment a lease's valid_ms counts from: the send time of the request that got it, plus the
 * part of the bridge's wait (waited_ms, measured on the bridge's clock after it received the
 * request) that holds whatever the clocks' rates (within 10 % of each other, docs/safety.md).
 * A bridge that sends no waited_ms gets the send time alone.
 */
function grantedAt(sentAt, waitedMs) {
  return sentAt + (Number.isFinite(waitedMs) && waitedMs > 0 ? waitedMs * 0.9 : 0)
}

/**
 * The ping interval for a welcome: the configured one, else the bridge's. Throws (one line) when
 * the configured interval leaves room for less than two pings before the connection deadline.
 *
 * @param {number|undefined} configuredMs the heartbeatIntervalMs option
 * @param {{intervalMs: number, timeoutMs: number, marginMs: number}} rules the welcome's (lib/protocol.js rulesOf)
 * @param {string} display the bridge URL for the message
 */
function heartbeatInterval(configuredMs, rules, display) {
  if (configuredMs === undefined) return rules.intervalMs
  const max = (rules.timeoutMs - rules.marginMs) / 2
  if (configuredMs > max) {
    throw bridgeFailure(
      "heartbeat_interval",
      `locking-bridge: heartbeatIntervalMs ${configuredMs} is too long for the bridge at ${display}: its client timeout is ${rules.timeoutMs} ms, so the client must ping at least every ${max} ms ((timeout_ms - margin_ms)/2, margin_ms ${rules.marginMs}); lower the option or leave it unset to ping every ${rules.intervalMs} ms as the bridge asks`,
      { fatal: true }
    )
  }
  return configuredMs
}

/**
 * The deadlines of one connection and the one timer that watches them. on.connection() runs
 * when the connection deadline passes; on.lease(lease, why) for each lease whose own deadline
 * (why "deadline") or the drain deadline (why "drain") passes.
 *
 * The timer is armed for the earliest deadline known when it is armed (timerAt), and re-armed
 * only when a deadline earlier than that appears (a new lease's, the drain's). A deadline that
 * moves later (an answered request, a renewal: several per execute) leaves it alone: it then
 * fires early, finds nothing due and re-arms for the earliest deadline. Every deadline is thus at
 * or after timerAt, and none passes unchecked.
 */
class Deadlines {
  /**
   * @param {{timeoutMs: number, marginMs: number, since: number}} opts the welcome's timeout_ms
   *   and margin (lib/protocol.js rulesOf); since: a time the bridge certainly received something
   *   after (the upgrade request's send time)
   * @param {{connection(): void, lease(lease: object, why: "deadline"|"drain"): void}} on
   */
  constructor({ timeoutMs, marginMs, since }, on) {
    this.timeoutMs = timeoutMs
    this.margin = marginMs
    this.proof = since
    this.drainAt = Infinity
    this.leases = new Map() // lease -> deadline
    this.on = on
    this.timer = null
    this.timerAt = Infinity // the deadline the timer is armed for
    this.stopped = false
    this.schedule()
  }

  /** The connection deadline: every lease of it is lost then. */
  get connectionDeadline() {
    return this.proof + this.timeoutMs - this.margin
  }

  /** The bridge answered a request sent at sentAt: the connection deadline moves later (the timer stays). */
  answered(sentAt) {
    if (sentAt > this.proof) this.proof = sentAt
  }

  /** The bridge said, answering a request sent at sentAt, that lease is valid for validMs more. */
  valid(lease, sentAt, validMs) {
    const at = sentAt + (Number.isFinite(validMs) ? validMs : 0)
    const before = this.leases.get(lease)
    if (before === undefined || at > before) this.leases.set(lease, at)
    this.earliest(before === undefined || at > before ? at : before)
  }

  /** The deadline of lease: the earliest of its own, the connection's and the drain's. */
  deadlineOf(lease) {
    return Math.min(this.leases.get(lease) ?? -Infinity, this.connectionDeadline, this.drainAt)
  }

  forget(lease) {
    this.leases.delete(lease)
  }

  /** going_away: every lease is lost at receipt + drainMs − margin. */
  drain(drainMs) {
    this.drainAt = Math.min(this.drainAt, performance.now() + drainMs - this.margin)
    this.earliest(this.drainAt)
  }

  stop() {
    this.stopped = true
    clearTimeout(this.timer)
    this.timer = null
  }

  /** A deadline at `at` now exists: re-arms the timer if it is armed for later. */
  earliest(at) {
    if (at < this.timerAt) this.arm(at)
  }

  /** Arms the timer for the earliest of every deadline. */
  schedule() {
    let next = this.connectionDeadline
    for (const lease of this.leases.keys()) next = Math.min(next, this.deadlineOf(lease))
    this.arm(next)
  }

  arm(at) {
    if (this.stopped) return
    clearTimeout(this.timer)
    this.timerAt = at
    // A timer fires late, never early; the margin covers that for the connection, and each
    // check reads the clock instead of trusting the timer.
    this.timer = setTimeout(() => this.check(), Math.max(0, Math.ceil(at - performance.now())))
    this.timer.unref()
  }

  check() {
    if (this.stopped) return
    const now = performance.now()
    if (now >= this.connectionDeadline) {
      this.on.connection()
      return
    }
    for (const lease of [...this.leases.keys()]) {
      if (this.stopped) return
      if (now >= this.deadlineOf(lease)) {
        this.leases.delete(lease)
        this.on.lease(lease, now >= this.drainAt ? "drain" : "deadline")
      }
    }
    this.schedule()
  }
}

module.exports = { Deadlines, heartbeatInterval, grantedAt }
