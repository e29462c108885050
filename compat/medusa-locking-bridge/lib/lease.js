"use strict"

// A lease of one execute call, held on one bridge connection.

const { lockLost } = require("./errors")

/**
 * The fencing tokens of a grant (an acquire or lease reply): `fencingToken`, the one that stands
 * for every key (the bridge's fencing_token), and `fencingTokens`, each key's. Tokens are
 * integers below 2^53, exact as numbers; a bridge that sends none (older than tokens) leaves
 * fencingToken undefined and fencingTokens empty. See docs/fencing.md.
 */
function fencingOf(grant) {
  const token = grant?.fencing_token
  const tokens = grant?.fencing_tokens
  return {
    fencingToken: Number.isSafeInteger(token) ? token : undefined,
    fencingTokens: tokens && typeof tokens === "object" ? { ...tokens } : {},
  }
}

/**
 * A lease held on one connection (a Link): the keys of one execute call, renewed by the bridge
 * until released or lost. Its signal aborts, with the "Lost the lock" conflict, the moment the
 * client stops being certain of it: a lease_lost event, its own deadline, the connection's
 * deadline, a drain deadline, the end of the connection or close().
 *
 * The signal and the fencing tokens are made when first read: an AbortSignal costs microseconds
 * of CPU and garbage, and a job that takes no argument never reads either (see provider.js
 * execute). A signal first read after the loss is already aborted, with the same reason.
 */
class Lease {
  /**
   * @param {import("./link").Link} link the connection the lease belongs to
   * @param {string} id the bridge's lease id (valid on that connection only)
   * @param {string} owner its execute:<uuid> owner
   * @param {string[]} keys the keys as the caller gave them
   * @param {string} [lostMessage] the grant's lost_message: stock's "Lost the lock…" for these keys
   * @param {object} [grant] the lease reply, for its fencing tokens (see fencingOf)
   */
  constructor(link, id, owner, keys, lostMessage, grant) {
    this.link = link
    this.id = id
    this.owner = owner
    this.keys = keys
    this.lostMessage = typeof lostMessage === "string" ? lostMessage : undefined
    this.grant = grant
    this.state = "held" // held | lost | released
    /** Why the lease was lost (the signal's reason), once it is. */
    this.reason = undefined
    this.controller = null
    this.fencing_ = null
  }

  /** The lease's fencing tokens, handed to execute's job (see fencingOf). */
  get fencing() {
    return (this.fencing_ ??= fencingOf(this.grant))
  }

  /** Aborted with the "Lost the lock" conflict when the lease is lost. */
  get signal() {
    if (this.controller === null) {
      this.controller = new AbortController()
      if (this.state === "lost") this.controller.abort(this.reason)
    }
    return this.controller.signal
  }

  /** Marks the lease lost and aborts its signal with reason, or with "Lost the lock" caused by cause. */
  lose({ reason, cause }) {
    if (this.state !== "held") return
    this.state = "lost"
    // Every key is lost: the bridge's message for that names them in the caller's order, once each.
    this.reason = reason ?? lockLost([...new Set(this.keys)], this.lostMessage, cause)
    this.controller?.abort(this.reason)
  }

  /**
   * Gives the keys back. Resolves true when every key was still held and is now released, false
   * when the lease was lost (the bridge already dropped it, or the connection ended and the
   * bridge released it). Rejects when the bridge could not release (for example a Redis error).
   */
  release() {
    if (this.state !== "held") return Promise.resolve(false)
    this.state = "released"
    return this.link.releaseLease(this)
  }
}

module.exports = { Lease, fencingOf }
