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
// * a `shutting_down` reply left nothing behind: sent again on the next connection;
// * while no bridge tells the outcome, a request waits at most its own limit, counted from the
//   drop and whether or not a bridge welcomes the client meanwhile (see limit): a lease until
//   execute's timeout (then connection_lost: nothing is held, since the bridge frees the leases
//   of an ended connection); a release or releaseAll its connection wait (connectTimeoutMs); an
//   acquire that wait plus the settle window (an acquire with awaitQueue has no limit). The last
//   two then reject with outcome_unknown: they may have run, so they are never reported as
//   having left nothing behind.

const { bridgeFailure, outcomeUnknown, reasonOf } = require("./errors")
const { Lease } = require("./lease")
const { MAX_TIMER_MS } = require("./options")
const { Ops, Codes, ResumeStates } = require("./protocol")

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
    this.retrying = new Set() // failed settles waiting for their retry timer (settle.retryTimer)
    this.settleTimer = null
  }

  /** True while a request whose connection ended awaits its outcome: a resume, a settle or its retry. */
  get pending() {
    return this.groups.some((group) => this.awaited(group)) || this.settling.size > 0 || this.retrying.size > 0
  }

  /** True while a request of group still awaits its outcome (a resume's: through its own group). */
  awaited(group) {
    for (const entry of group.entries.values()) {
      if (entry.op === Ops.RESUME ? this.awaited(entry.group) : !gone(entry)) return true
    }
    return false
  }

  /**
   * Handles the reply to entry; link is the live connection it came on, or null (from a resume,
   * which passes batch to collect what is sent again).
   */
  reply(entry, reply, link, batch) {
    const { client } = this
    if (gone(entry)) return this.late(entry, reply, link)
    switch (entry.op) {
      case Ops.RESUME:
        return this.resumed(entry.group, reply)
      case Ops.SETTLE:
        return reply.ok === true ? this.settled(entry, reply.result ?? {}) : this.settleFailed(entry, client.bridgeError(reply.error))
      case Ops.LEASE_RELEASE:
        if (reply.ok === true) return client.finish(entry, null, reply.result?.released === true)
        return reply.error?.code === Codes.UNKNOWN_LEASE ? client.finish(entry, null, false) : client.finish(entry, client.bridgeError(reply.error))
    }
    if (reply.ok === true) {
      const result = reply.result ?? {}
      if (entry.op !== Ops.LEASE) return client.finish(entry, null, result)
      // A lease granted on a connection that has ended was released with it.
      if (!link) return this.again(entry, batch)
      const lease = new Lease(link, result.lease, result.owner, entry.keys, result.lost_message, result)
      link.addLease(lease, entry.sentAt, result.valid_ms, result.waited_ms)
      // valid_ms 0: the bridge found the lease lost before its grant was written.
      if (link.takeLostFirst(lease.id) || !(result.valid_ms > 0)) return this.givenBack(entry, lease, "lost")
      if (performance.now() >= link.deadlines.deadlineOf(lease)) return this.givenBack(entry, lease, "late")
      return client.finish(entry, null, lease)
    }
    if (entry.op === Ops.LEASE) link?.leaseAnswered()
    const code = reply.error?.code
    if (code === Codes.SHUTTING_DOWN && (entry.op === Ops.ACQUIRE || entry.op === Ops.LEASE)) {
      link?.stopTakingWork()
      return this.again(entry)
    }
    // The bridge lost Redis's reply to the acquire: its claim tells whether it took the keys.
    if (code === Codes.OUTCOME_UNKNOWN && entry.op === Ops.ACQUIRE) return this.settleAt(entry, performance.now())
    client.finish(entry, client.bridgeError(reply.error))
  }

  /**
   * The reply to a request given up on already (its limit passed, or the client closed): a lease
   * granted on a live link is given back at once, since nobody believes in it.
   */
  late(entry, reply, link) {
    if (entry.op !== Ops.LEASE || reply.ok !== true || typeof reply.result?.lease !== "string" || !link?.usable) return
    link.send({ op: Ops.LEASE_RELEASE, fields: { lease: reply.result.lease }, internal: true })
  }

  /** A link ended with entries in flight: they wait for a resume on the next connection. */
  orphaned(link, entries) {
    const droppedAt = performance.now()
    const group = { session: link.welcome.session, timeoutMs: link.timeoutMs, lastSentAt: link.socket.lastSentAt, entries: new Map() }
    for (const entry of entries) {
      if (entry.op === Ops.PING) continue
      // A lease of an ended connection is released by the bridge: nothing to give back.
      if (entry.op === Ops.LEASE_RELEASE) this.client.finish(entry, null, false)
      else {
        group.entries.set(entry.id, entry)
        this.limit(entry, group, droppedAt)
      }
    }
    if (group.entries.size === 0) return
    this.groups.push(group)
    this.resumeAll()
  }

  /**
   * Arms the limit of entry, cut off by the end of its connection (group) at droppedAt: how long
   * it may wait for its outcome (see the top of this file). Internal entries (a settle, a resume)
   * have none of their own: the calls they serve have theirs.
   */
  limit(entry, group, droppedAt) {
    let ms
    if (entry.op === Ops.LEASE) ms = entry.deadline - droppedAt
    else if (entry.op === Ops.RELEASE || entry.op === Ops.RELEASE_ALL) ms = entry.waitMs
    else if (entry.op === Ops.ACQUIRE) ms = entry.waitMs + Math.max(0, settleTime(group) - droppedAt)
    else return
    clearTimeout(entry.orphanTimer)
    entry.orphanTimer = null
    if (!(ms < MAX_TIMER_MS)) return // no limit (an acquire with awaitQueue)
    entry.orphanTimer = setTimeout(() => this.gaveUp(entry, droppedAt), Math.max(0, ms))
  }

  /** The limit of entry (see limit) passed before any bridge told its outcome. */
  gaveUp(entry, droppedAt) {
    entry.orphanTimer = null
    if (entry.done) return
    this.settling.delete(entry)
    for (const settle of this.retrying) if (settle.acquire === entry) this.stopRetry(settle)
    const { queue } = this.client
    for (let i = queue.length - 1; i >= 0; i--) if (queue[i].acquire === entry) queue.splice(i, 1) // its queued settle
    if (entry.op === Ops.LEASE) {
      this.client.finish(entry, this.leaseCutOff(entry))
    } else {
      const { lastError, lastErrorAt } = this.client
      const last = lastError ? `; the last error, at ${lastErrorAt}: ${reasonOf(lastError)}` : ""
      const why = `the connection to the bridge at ${this.displayOf(entry)} ended before the reply, and no bridge told its outcome within ${Math.round(performance.now() - droppedAt)} ms${last}`
      this.client.finish(entry, outcomeUnknown(entry.op, entry.sent, why))
    }
    this.client.keepAlive()
  }

  /** The error of a lease request cut off by a lost connection once execute's timeout passed. */
  leaseCutOff(entry) {
    return bridgeFailure(
      "connection_lost",
      `locking-bridge: the connection to the bridge at ${this.displayOf(entry)} ended while "${Ops.LEASE}" was in flight and execute's timeout has passed; nothing is held`
    )
  }

  /** Sends a resume for every session waiting for one, on the current link. */
  resumeAll() {
    const link = this.client.current
    if (!link) return
    for (const group of this.groups.splice(0)) {
      if (!this.awaited(group)) continue // every request of it was given up on
      const resume = { op: Ops.RESUME, group, fields: { session: group.session, ids: [...group.entries.keys()] }, internal: true }
      link.send(resume, { counted: false })
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
      if (gone(entry)) continue // given up on (its limit passed)
      const o = outcomes.get(entry.id)
      const state = o?.state === ResumeStates.REPLIED && !(o.reply && typeof o.reply === "object") ? ResumeStates.UNKNOWN : o?.state ?? ResumeStates.UNKNOWN
      this.client.logger?.debug?.(`locking-bridge: resumed "${entry.op}" (id ${entry.id}): ${state}`)
      if (state === ResumeStates.REPLIED) this.reply(entry, o.reply, null, resend)
      else if (state === ResumeStates.CANCELLED || state === ResumeStates.NOT_RECEIVED) this.again(entry, resend)
      else this.unknown(entry, group, resend)
    }
    for (const entry of resend.reverse()) this.client.enqueue(entry, { front: true })
  }

  /** The outcome of entry is unknown (the session, or the request, is not known any more). */
  unknown(entry, group, batch) {
    if (gone(entry)) return
    const why = `the connection to the bridge at ${this.displayOf(entry)} ended before the reply, and the bridge no longer knows the request`
    switch (entry.op) {
      case Ops.ACQUIRE:
        return this.settleAt(entry, settleTime(group))
      case Ops.RELEASE:
      case Ops.RELEASE_ALL:
        return this.client.finish(entry, outcomeUnknown(entry.op, entry.sent, why))
      case Ops.RESUME:
        for (const inner of entry.group.entries.values()) this.unknown(inner, entry.group)
        return
      default: // lease (nothing to delete: sent again within its timeout), settle (read and undo by claim)
        return this.again(entry, batch)
    }
  }

  /**
   * Sends entry again on the next connection, if it is still wanted (into batch, when given, for
   * the caller to queue). Its outcome is known: it left nothing behind, so its limit (see limit)
   * ends; it waits like new work.
   */
  again(entry, batch) {
    const { client } = this
    if (gone(entry)) return
    if (entry.op === Ops.RESUME) {
      this.groups.push(entry.group)
      return this.resumeAll()
    }
    clearTimeout(entry.orphanTimer)
    entry.orphanTimer = null
    if (entry.op === Ops.LEASE && performance.now() >= entry.deadline) return client.finish(entry, this.leaseCutOff(entry))
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
    client.finish(entry, why === "lost" ? lostAtGrant(lease) : bridgeFailure("lease_too_late", grantedNone(lease, "arrived after its own deadline (the link is too slow)")))
  }

  /** Settles acquire at time at (performance.now()), on the connection current then. */
  settleAt(acquire, at) {
    if (acquire.done) return
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
      if (acquire.done) {
        this.settling.delete(acquire)
        continue
      }
      if (acquire.settleAt > now) {
        next = Math.min(next, acquire.settleAt)
        continue
      }
      this.settling.delete(acquire)
      const fields = { keys: acquire.sent.keys, owner: acquire.sent.owner, claim: acquire.sent.claim }
      this.client.enqueue({ op: Ops.SETTLE, fields, acquire, tries: 0, waitMs: Infinity, internal: true })
    }
    if (next < Infinity) this.settleTimer = setTimeout(() => this.settleDue(), Math.ceil(next - now))
  }

  settled(settle, result) {
    if (settle.acquire.done) return
    this.client.logger?.debug?.(`locking-bridge: settled "${Ops.ACQUIRE}" (claim ${settle.fields.claim}): held: ${result.held === true}`)
    // Held: the settle reply carries the tokens the lost acquire reply had (fencing_token(s)).
    if (result.held === true) return this.client.finish(settle.acquire, null, result)
    // Nothing of it is held (the bridge undid a partial one): send it again with a new claim.
    this.again(settle.acquire)
  }

  /** A settle failed (err): tried again after a growing delay, SETTLE_TRIES times in all. */
  settleFailed(settle, err) {
    if (settle.acquire.done) return
    settle.tries++
    if (settle.tries >= SETTLE_TRIES || this.client.closed) {
      const why = `its reply was lost, and asking the bridge at ${this.displayOf(settle)} whether it holds the keys (settle) failed: ${err.message}`
      return this.client.finish(settle.acquire, outcomeUnknown(Ops.ACQUIRE, settle.acquire.sent, why, err))
    }
    // Tracked, so that close() (failAll) and the acquire's limit stop it.
    settle.retryTimer = setTimeout(() => {
      this.retrying.delete(settle)
      this.client.enqueue(settle, { front: true })
    }, 250 * 2 ** settle.tries)
    this.retrying.add(settle)
  }

  stopRetry(settle) {
    clearTimeout(settle.retryTimer)
    this.retrying.delete(settle)
  }

  /** The URL of the bridge entry was last sent to, for messages (the client's URLs if none). */
  displayOf(entry) {
    return entry.link?.display ?? this.client.display
  }

  /**
   * Rejects every request waiting for a resume, a settle or a settle's retry, at once (close()).
   * Those that may have run (an acquire, a release) reject with outcome_unknown, caused by err:
   * the client cannot tell any more.
   */
  failAll(err) {
    clearTimeout(this.settleTimer)
    for (const group of this.groups.splice(0)) for (const entry of group.entries.values()) this.client.finish(entry, this.unknownBecause(entry, err))
    for (const acquire of this.settling) this.client.finish(acquire, this.unknownBecause(acquire, err))
    this.settling.clear()
    for (const settle of [...this.retrying]) {
      this.stopRetry(settle)
      this.client.finish(settle, err)
    }
  }

  /**
   * The error of entry, whose outcome is unknown, when the client stops waiting for it because of
   * err (the client was closed, or the request that would tell failed): outcome_unknown, caused
   * by err, for a request that may have run (an acquire, a release); err itself for the others.
   */
  unknownBecause(entry, err) {
    if (![Ops.ACQUIRE, Ops.RELEASE, Ops.RELEASE_ALL].includes(entry.op)) return err
    const why = err?.bridgeCode === "closed" ? "the client was closed before the bridge could tell it" : `the client could not learn it: ${reasonOf(err)}`
    return outcomeUnknown(entry.op, entry.sent, why, err)
  }
}

/** When the client settles the acquires of the ended connection group: its end at the bridge is then certain. */
function settleTime(group) {
  return group.lastSentAt + group.timeoutMs + SETTLE_SLACK_MS
}

/** True when entry needs no outcome any more: it is settled, or it is the settle of an acquire that is. */
function gone(entry) {
  return entry.done === true || entry.acquire?.done === true
}

/** The message of an execute whose every lease within its timeout came to nothing, and why. */
function grantedNone(lease, what) {
  return `locking-bridge: every lease the bridge at ${lease.link.display} granted within execute's timeout ${what}; nothing is held`
}

/** The error of an execute whose every lease was reported lost before its job could start. */
function lostAtGrant(lease) {
  return bridgeFailure("lost_at_grant", grantedNone(lease, "was reported lost before its job could start"))
}

module.exports = { Requests, lostAtGrant }
