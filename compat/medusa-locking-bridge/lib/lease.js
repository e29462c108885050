"use strict"

// A lease of one execute call, held on one bridge connection.

/**
 * A lease held by this connection: the keys of one execute call, renewed by the bridge until
 * released, lost (lease_lost event) or until the connection drops.
 */
class Lease {
  constructor(connection, id, owner, keys) {
    this.connection = connection
    this.id = id
    this.owner = owner
    this.keys = keys
    this.state = "held" // held | lost | released
    this.controller = new AbortController()
  }

  /** Aborted with the "Lost the lock" conflict when the lease is lost. */
  get signal() {
    return this.controller.signal
  }

  lose(reason) {
    if (this.state !== "held") return
    this.state = "lost"
    this.controller.abort(reason)
  }

  /**
   * Gives the keys back. Resolves true when every key was still held and is now released,
   * false when the lease was lost (the bridge already dropped it, or the connection closed and
   * the bridge released it). Rejects when the bridge could not release (for example a Redis error).
   */
  async release() {
    if (this.state !== "held") return false
    this.state = "released"
    this.connection.leases.delete(this.id)
    try {
      const result = await this.connection.request("lease_release", { lease: this.id }, { connectWaitMs: 0 })
      return result?.released === true
    } catch (err) {
      // A closed connection takes its leases with it: the bridge releases them, owner-checked.
      if (["connection_lost", "not_connected", "closed", "unknown_lease"].includes(err?.bridgeCode)) return false
      throw err
    }
  }
}

module.exports = { Lease }
