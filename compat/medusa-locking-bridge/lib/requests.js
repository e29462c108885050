"use strict"

// What a reply means, and what becomes of a request whose connection ended before its reply
// (docs/bridge-protocol.md, "Reconnecting"). Nothing is ever sent again blindly:
//
// * on the next connection the client first sends `resume` with the old session and the ids
//   that were in flight there; `replied` delivers the reply, `cancelled` and `not_received` send
//   the request again, anything else is unknown;
// * unknown release / release_all: rejected with outcome_unknown, never sent again;
// * unknown acquire: once the old connection has certainly ended at the bridge (its last frame's
//   send time + timeout_ms + 1 s), `settle` with its claim tells whether it holds the keys
//   (success) or left nothing behind (sent again with a fresh claim);
// * unknown lease (or one granted on the ended connection): sent again within execute's timeout;
// * a `shutting_down` reply left nothing behind: sent again on the next connection.

const { Types, lockingError, outcomeUnknown } = require("./errors")
const { Lease } = require("./lease")

/** How far past the old connection's end the client waits before settling an acquire. */
const SETTLE_SLACK_MS = 1000
/** A settle that the bridge fails (Redis down) is tried this many times, with growing delays. */
const SETTLE_TRIES = 5

/** The in-flight bookkeeping of one client: replies, resumes and settles. */
class Requests {
  /** @param {import("./connection").BridgeConnection} client */
  constructor(client) {
    this.client = client
    this.groups = [] // sessions whose in-flight ids wait for a resume: {session, timeoutMs, lastSentAt, entries}
    this.settling = new Set() // acquires waiting for their settle time
    this.settleTimer = null
  }

  /** True while a request whose connection ended awaits its outcome: a resume or a settle. */
  get pending() {
    return this.groups.length > 0 || this.settling.size > 0
  }

  /**
   * Handles the reply to entry; link is the live connection it came on, or null (from a resume,
   * which passes batch to collect what is sent again).
   */
  reply(entry, reply, link, batch) {
    const { client } = this
    switch (entry.op) {
      case "resume":
        return this.resumed(entry.group, reply)
      case "settle":
        return reply.ok === true ? this.settled(entry, reply.result ?? {}) : this.settleFailed(entry, client.bridgeError(reply.error))
      case "lease_release":
        if (reply.ok === true) return client.finish(entry, null, reply.result?.released === true)
        return reply.error?.code === "unknown_lease" ? client.finish(entry, null, false) : client.finish(entry, client.bridgeError(reply.error))
    }
    if (reply.ok === true) {
      const result = reply.result ?? {}
      if (entry.op !== "lease") return client.finish(entry, null, result)
      // A lease granted on a connection that has ended was released with it.
      if (!link) return this.again(entry, batch)
      const lease = new Lease(link, result.lease, result.owner, entry.keys, result.lost_message, result)
      link.addLease(lease, entry.sentAt, result.valid_ms, result.waited_ms)
      // valid_ms 0: the bridge found the lease lost before its grant was written.
      if (link.takeLostFirst(lease.id) || !(result.valid_ms > 0)) return this.givenBack(entry, lease, "lost")
      if (performance.now() >= link.deadlines.deadlineOf(lease)) return this.givenBack(entry, lease, "late")
      return client.finish(entry, null, lease)
    }
    if (entry.op === "lease") link?.leaseAnswered()
    const code = reply.error?.code
    if (code === "shutting_down" && (entry.op === "acquire" || entry.op === "lease")) {
      link?.stopTakingWork()
      return this.again(entry)
    }
    // The bridge lost Redis's reply to the acquire: its claim tells whether it took the keys.
    if (code === "outcome_unknown" && entry.op === "acquire") return this.settleAt(entry, performance.now())
    client.finish(entry, client.bridgeError(reply.error))
  }

  /** A link ended with entries in flight: they wait for a resume on the next connection. */
  orphaned(link, entries) {
    const group = { session: link.welcome.session, timeoutMs: link.timeoutMs, lastSentAt: link.socket.lastSentAt, entries: new Map() }
    for (const entry of entries) {
      if (entry.op === "ping") continue
      // A lease of an ended connection is released by the bridge: nothing to give back.
      if (entry.op === "lease_release") this.client.finish(entry, null, false)
      else group.entries.set(entry.id, entry)
    }
    if (group.entries.size === 0) return
    this.groups.push(group)
    this.resumeAll()
  }

  /** Sends a resume for every session waiting for one, on the current link. */
  resumeAll() {
    const link = this.client.current
    if (!link) return
    for (const group of this.groups.splice(0)) {
      link.send({ op: "resume", group, fields: { session: group.session, ids: [...group.entries.keys()] }, internal: true }, { counted: false })
    }
  }

  resumed(group, reply) {
    const outcomes = new Map()
    if (reply.ok === true && reply.result?.known === true && Array.isArray(reply.result.outcomes)) {
      for (const o of reply.result.outcomes) outcomes.set(o?.id, o)
    } else if (reply.ok !== true) {
      this.client.logger?.warn?.(`locking-bridge: the bridge refused to resume a session: ${reply.error?.message}`)
    }
    // Requests sent again keep their order, ahead of newer work.
    const resend = []
    for (const entry of group.entries.values()) {
      const o = outcomes.get(entry.id)
      const state = o?.state === "replied" && !(o.reply && typeof o.reply === "object") ? "unknown" : o?.state ?? "unknown"
      this.client.logger?.debug?.(`locking-bridge: resumed "${entry.op}" (id ${entry.id}): ${state}`)
      if (state === "replied") this.reply(entry, o.reply, null, resend)
      else if (state === "cancelled" || state === "not_received") this.again(entry, resend)
      else this.unknown(entry, group, resend)
    }
    for (const entry of resend.reverse()) this.client.enqueue(entry, { front: true })
  }

  /** The outcome of entry is unknown (the session, or the request, is not known any more). */
  unknown(entry, group, batch) {
    const why = `the connection to the bridge at ${this.client.display} ended before the reply, and the bridge no longer knows the request`
    switch (entry.op) {
      case "acquire":
        return this.settleAt(entry, group.lastSentAt + group.timeoutMs + SETTLE_SLACK_MS)
      case "release":
      case "release_all":
        return this.client.finish(entry, outcomeUnknown(entry.op, entry.sent, why))
      case "resume":
        for (const inner of entry.group.entries.values()) this.unknown(inner, entry.group)
        return
      default: // lease (nothing to delete: sent again within its timeout), settle (read and undo by claim)
        return this.again(entry, batch)
    }
  }

  /** Sends entry again on the next connection, if it is still wanted (into batch, when given, for the caller to queue). */
  again(entry, batch) {
    const { client } = this
    if (entry.op === "resume") {
      this.groups.push(entry.group)
      return this.resumeAll()
    }
    if (entry.op === "lease" && performance.now() >= entry.deadline) {
      return client.finish(
        entry,
        lockingError(
          Types.UNEXPECTED_STATE,
          `locking-bridge: the connection to the bridge at ${client.display} ended while "lease" was in flight and execute's timeout has passed; nothing is held`,
          { bridgeCode: "connection_lost" }
        )
      )
    }
    if (batch) batch.push(entry)
    else client.enqueue(entry, { front: true })
  }

  /**
   * A lease that is not certain when its grant is read is never handed to the job: one whose
   * reply came after its own deadline (why "late": a slow link, Redis may have expired a key
   * already), or one the bridge reported lost before its grant (why "lost"). It is given back
   * (which also tells the bridge that nobody believes in it) and asked for again while
   * execute's timeout allows.
   */
  givenBack(entry, lease, why) {
    const { client } = this
    lease.release().catch(() => {}) // the bridge retries a failed release itself
    if (performance.now() < entry.deadline) return client.enqueue(entry, { front: true })
    const [what, bridgeCode] =
      why === "lost"
        ? ["was reported lost before its grant arrived", "lost_at_grant"]
        : ["arrived after its own deadline (the link is too slow)", "lease_too_late"]
    client.finish(
      entry,
      lockingError(
        Types.UNEXPECTED_STATE,
        `locking-bridge: every lease the bridge at ${client.display} granted within execute's timeout ${what}; nothing is held`,
        { bridgeCode }
      )
    )
  }

  /** Settles acquire at time at (performance.now()), on the connection current then. */
  settleAt(acquire, at) {
    acquire.settleAt = at
    this.settling.add(acquire)
    this.settleDue()
    this.client.keepAlive()
  }

  /** Sends the settles that are due; sets a timer for the next one. */
  settleDue() {
    clearTimeout(this.settleTimer)
    this.settleTimer = null
    const now = performance.now()
    let next = Infinity
    for (const acquire of this.settling) {
      if (acquire.settleAt > now) {
        next = Math.min(next, acquire.settleAt)
        continue
      }
      this.settling.delete(acquire)
      const fields = { keys: acquire.sent.keys, owner: acquire.sent.owner, claim: acquire.sent.claim }
      this.client.enqueue({ op: "settle", fields, acquire, tries: 0, waitMs: Infinity, internal: true })
    }
    if (next < Infinity) this.settleTimer = setTimeout(() => this.settleDue(), Math.ceil(next - now))
  }

  settled(settle, result) {
    this.client.logger?.debug?.(`locking-bridge: settled "acquire" (claim ${settle.fields.claim}): held: ${result.held === true}`)
    // Held: the settle reply carries the tokens the lost acquire reply had (fencing_token(s)).
    if (result.held === true) return this.client.finish(settle.acquire, null, result)
    // Nothing of it is held (the bridge undid a partial one): send it again with a new claim.
    this.again(settle.acquire)
  }

  settleFailed(settle, err) {
    settle.tries++
    if (settle.tries >= SETTLE_TRIES || this.client.closed) {
      const why = `its reply was lost, and asking the bridge at ${this.client.display} whether it holds the keys (settle) failed: ${err.message}`
      return this.client.finish(settle.acquire, outcomeUnknown("acquire", settle.acquire.sent, why, err))
    }
    setTimeout(() => this.client.enqueue(settle, { front: true }), 250 * 2 ** settle.tries)
  }

  /**
   * Rejects every request waiting for a resume or a settle (close()). Those that may have run
   * (an acquire, a release) reject with outcome_unknown, caused by err: the client cannot tell
   * any more.
   */
  failAll(err) {
    clearTimeout(this.settleTimer)
    for (const group of this.groups.splice(0)) for (const entry of group.entries.values()) this.client.finish(entry, this.closedBefore(entry, err))
    for (const acquire of this.settling) this.client.finish(acquire, this.closedBefore(acquire, err))
    this.settling.clear()
  }

  /** The error of entry, whose outcome is unknown, when the client closes (err). */
  closedBefore(entry, err) {
    if (!["acquire", "release", "release_all"].includes(entry.op)) return err
    return outcomeUnknown(entry.op, entry.sent, "the client was closed before the bridge could tell it", err)
  }
}

module.exports = { Requests }
