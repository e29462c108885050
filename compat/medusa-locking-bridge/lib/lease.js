"use strict"

// A lease of one execute call, held on one bridge connection.

const { lockLost } = require("./errors")

/**
 * A lease held on one connection (a Link): the keys of one execute call, renewed by the bridge
 * until released or lost. Its signal aborts, with the "Lost the lock" conflict, the moment the
 * client stops being certain of it: a lease_lost event, its own deadline, the connection's
 * deadline, a drain deadline, the end of the connection or close().
 */
class Lease {
  /**
   * @param {import("./link").Link} link the connection the lease belongs to
   * @param {string} id the bridge's lease id (valid on that connection only)
   * @param {string} owner its execute:<uuid> owner
   * @param {string[]} keys the keys as the caller gave them
   * @param {string} [lostMessage] the grant's lost_message: stock's "Lost the lock…" for these keys
   */
  constructor(link, id, owner, keys, lostMessage) {
    this.link = link
    this.id = id
    this.owner = owner
    this.keys = keys
    this.lostMessage = typeof lostMessage === "string" ? lostMessage : undefined
    this.state = "held" // held | lost | released
    this.controller = new AbortController()
  }

  /** Aborted with the "Lost the lock" conflict when the lease is lost. */
  get signal() {
    return this.controller.signal
  }

  /** Marks the lease lost and aborts its signal with reason, or with "Lost the lock" caused by cause. */
  lose({ reason, cause }) {
    if (this.state !== "held") return
    this.state = "lost"
    // Every key is lost: the bridge's message for that names them in the caller's order, once each.
    this.controller.abort(reason ?? lockLost([...new Set(this.keys)], this.lostMessage, cause))
  }

  /**
   * Gives the keys back. Resolves true when every key was still held and is now released, false
   * when the lease was lost (the bridge already dropped it, or the connection ended and the
   * bridge released it). Rejects when the bridge could not release (for example a Redis error).
   */
  async release() {
    if (this.state !== "held") return false
    this.state = "released"
    return this.link.releaseLease(this)
  }
}

module.exports = { Lease }
