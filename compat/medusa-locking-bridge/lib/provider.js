"use strict"

// The locking provider: stock @medusajs/locking-redis 2.21.2's API and argument coercions, served
// by a locktui bridge (which applies the Go provider's fixed semantics).

const { BridgeConnection } = require("./connection")
const { Types, lockingError } = require("./errors")
const { lostAtGrant } = require("./requests")
const { fencingOf } = require("./lease")
const { parseUrls } = require("./options")
const { Ops } = require("./protocol")

/** Stock defaults, in seconds. */
const DEFAULT_WAIT_LOCKING_TIMEOUT = 5
const DEFAULT_LEASE_EXPIRE = 60

/** The cradle names the loader registers and the constructor reads. */
const CLIENT_REGISTRATION = "lockingBridgeClient"
const OPTIONS_REGISTRATION = "lockingBridgeOptions"

/**
 * Checks the provider options as Medusa gives them (medusa-config `providers[].options`), each
 * problem in one line naming the option: a missing url (worded as stock words a missing
 * redisUrl), a bad URL in it, a lazyConnect that is not a boolean.
 */
function validateOptions(options) {
  if (!options?.url || (Array.isArray(options.url) && options.url.length === 0)) {
    throw new Error(
      `No "url" provided in "locking" module, "locking-bridge" provider options. It is required for the "locking-bridge" Module provider.`
    )
  }
  parseUrls(options.url)
  if (options.lazyConnect !== undefined && typeof options.lazyConnect !== "boolean") {
    throw new Error(`locking-bridge: the "lazyConnect" option must be true or false, got ${JSON.stringify(options.lazyConnect) ?? String(options.lazyConnect)}`)
  }
}

/** Reads a property of an awilix cradle, which throws for names that are not registered. */
function fromCradle(cradle, name) {
  try {
    return cradle?.[name]
  } catch {
    return undefined
  }
}

/** Stock's option coercion: `+value`, applied only when it is a number (so null and "" give 0). */
function coerced(value) {
  const n = +value
  return Number.isNaN(n) ? undefined : n
}

function toKeys(keys) {
  return (Array.isArray(keys) ? keys : [keys]).map((k) => String(k))
}

/**
 * `ownerId ?? "*"`, stringified as ioredis would store it. An empty owner is refused when the
 * request is sent, by the rules of the bridge it goes to (lib/link.js limitProblem: bridges
 * announce empty_owner_allowed).
 */
function toOwner(ownerId) {
  return String(ownerId ?? "*")
}

/** An arrow function without parameters, as Function.prototype.toString shows it. */
const NO_PARAMETERS = /^(?:async\s*)?\(\s*\)\s*=>/

/**
 * True when fn cannot see the arguments it is called with: an arrow function (it has no
 * `arguments` of its own) declared with no parameters, such as stock's jobs, `async () => {…}`.
 * Anything else (parameters, rest or default parameters, a regular or bound function, a proxy,
 * a comment in the way) counts as one that may read them.
 */
function takesNoArguments(fn) {
  return typeof fn === "function" && fn.length === 0 && NO_PARAMETERS.test(Function.prototype.toString.call(fn))
}

/**
 * value, a number of seconds, when it is finite (JSON has no Infinity: it would be sent as null,
 * meaning "absent"). The bridge's upper bound (its max_seconds) is checked when the request is
 * sent (lib/link.js limitProblem).
 */
function checkSeconds(name, value, given) {
  if (!Number.isFinite(value)) {
    throw lockingError(Types.INVALID_DATA, `locking-bridge: "${name}" must be a finite number of seconds, got ${String(given)}`)
  }
  return value
}

/**
 * A Medusa locking provider backed by a locktui bridge. In Medusa it is built by the module
 * loader from the cradle its loader filled; elsewhere use createBridgeLockingProvider().
 */
class BridgeLockingProvider {
  static identifier = "locking-bridge"

  static validateOptions(options) {
    validateOptions(options)
  }

  /**
   * @param {object} cradle the provider container's cradle: `lockingBridgeClient` (registered
   *   by the loader), optional `lockingBridgeOptions` and `logger`.
   * @param {object} [moduleOptions] the Locking module's options (Medusa passes the module's, not
   *   the provider's); `waitLockingTimeout` is read there when the provider options lack it.
   */
  constructor(cradle, moduleOptions) {
    const client = fromCradle(cradle, CLIENT_REGISTRATION)
    if (!(client instanceof BridgeConnection)) {
      throw new Error(
        `locking-bridge: no bridge client in the provider container, so the provider's loader did not run. Resolve the package itself (for example "resolve": "@locktui/medusa-locking-bridge") so that Medusa runs its loader, or use createBridgeLockingProvider() outside Medusa.`
      )
    }
    this.client_ = client
    this.logger_ = fromCradle(cradle, "logger")
    const providerOptions = fromCradle(cradle, OPTIONS_REGISTRATION) ?? {}
    this.waitLockingTimeout =
      coerced(providerOptions.waitLockingTimeout) ?? coerced(moduleOptions?.waitLockingTimeout) ?? DEFAULT_WAIT_LOCKING_TIMEOUT
    /** Whether execute waits for the bridge's answer to its release (stock's timing; not the default, see the README). */
    this.awaitRelease = providerOptions.awaitRelease === true
  }

  /**
   * Runs job while holding every key (a bridge lease renewed underneath it). Waits up to
   * `timeout` seconds (default waitLockingTimeout) for the keys, else rejects with the conflict
   * "Timed-out acquiring lock."; the job gets an AbortSignal aborted when the lease is lost and,
   * as a second argument, the lease's fencing tokens ({fencingToken, fencingTokens}, see
   * docs/fencing.md): stock's jobs take no argument and ignore both.
   */
  async execute(keys, job, args, sharedContext) {
    keys = toKeys(keys)
    // Infinity is allowed: the lease request asks for the bridge's max_seconds at most.
    let timeout = Math.max(args?.timeout ?? this.waitLockingTimeout, 1)
    if (Number.isNaN(timeout)) timeout = 1
    let expire = Math.max(args?.expire ?? DEFAULT_LEASE_EXPIRE, 1)
    if (Number.isNaN(expire)) expire = DEFAULT_LEASE_EXPIRE
    checkSeconds("expire", expire, args?.expire)
    if (keys.length === 0) {
      // Stock takes no lock and runs the job with a signal nothing aborts.
      return await job(new AbortController().signal, fencingOf(null))
    }
    const lease = await this.lease_(keys, timeout, expire)
    try {
      // A job that cannot see its arguments gets none: its lease makes no AbortSignal (see Lease).
      const result = takesNoArguments(job) ? await job() : await job(lease.signal, lease.fencing)
      if (lease.state === "lost") throw lease.reason
      return result
    } finally {
      // The release is sent now, in order before any later request of this client on these
      // keys (the bridge runs it first); execute waits for its reply only with awaitRelease.
      const released = lease.release()
      // The order holds on one connection: a lease of a draining one releases there while this
      // client's next request goes to the new one, so execute waits for that release.
      if (this.awaitRelease || lease.link !== this.client_.current) await released
      else released.catch((err) => this.releaseFailed_(keys, err))
    }
  }

  /**
   * A release that execute did not wait for failed (the job's result stands: it ran while the
   * keys were held). The bridge retries the release itself and the lease stopped being renewed,
   * so the keys are free again by their TTL at the latest.
   */
  releaseFailed_(keys, err) {
    this.logger_?.warn?.(
      `locking-bridge: releasing the lock for key(s) ${keys.map((k) => JSON.stringify(k)).join(", ")} after execute failed (the bridge retries it; the keys expire with their TTL at the latest): ${err?.message}`
    )
  }

  /**
   * Takes a lease, waiting for a connection and for the keys within `timeout` seconds. A lease
   * request cut off by a lost connection is sent again within that time (the bridge releases the
   * leases of an ended connection, so a lost reply leaves nothing behind). A lease found lost
   * before its job could start (its lease_lost read in the same batch as its grant) is given back
   * and asked for again, as one lost before its grant is: no job starts on a lost lease.
   */
  async lease_(keys, timeoutSeconds, expireSeconds) {
    const deadline = performance.now() + timeoutSeconds * 1000
    for (;;) {
      const lease = await this.client_.lease(keys, expireSeconds, deadline)
      if (lease.state !== "lost") return lease
      lease.release().catch(() => {}) // the acknowledgement: the bridge may free what it still holds
      if (performance.now() >= deadline) throw lostAtGrant(lease)
    }
  }

  /**
   * Takes every key for `ownerId` (default "*"). Without awaitQueue it rejects at once with the
   * conflict `Failed to acquire lock for key "<key>"`; with awaitQueue it waits as long as it
   * takes (as stock does), or until close(). It resolves undefined, as stock does, unless
   * `args.fencing` is an object: that object then gets the fencing tokens of the keys taken
   * ({fencingToken, fencingTokens}, see docs/fencing.md) and is what acquire resolves with. Medusa's
   * Locking module resolves undefined but hands the provider the same args object, so the
   * tokens reach its caller that way too.
   */
  async acquire(keys, args, sharedContext) {
    keys = toKeys(keys)
    const out = args?.fencing !== null && typeof args?.fencing === "object" ? args.fencing : undefined
    if (keys.length === 0) return out && Object.assign(out, fencingOf(null))
    const owner = toOwner(args?.ownerId)
    const awaitQueue = Boolean(args?.awaitQueue)
    let ttl = Math.max(args?.expire ?? this.waitLockingTimeout, 1)
    if (Number.isNaN(ttl)) ttl = 1
    const expire = args?.expire ? checkSeconds("expire", ttl, args.expire) : 0
    const result = await this.client_.request(Ops.ACQUIRE, { keys, owner, expire, await_queue: awaitQueue }, { waitMs: awaitQueue ? Infinity : undefined })
    return out && Object.assign(out, fencingOf(result))
  }

  /** Releases keys held by `ownerId` (default "*"); true only when every key was released. */
  async release(keys, args, sharedContext) {
    keys = toKeys(keys)
    if (keys.length === 0) return true
    const owner = toOwner(args?.ownerId)
    const result = await this.client_.request(Ops.RELEASE, { keys, owner })
    return result?.released === true
  }

  /** Releases every key held by `ownerId` (default "*": only anonymous locks, as stock). */
  async releaseAll(args, sharedContext) {
    const owner = toOwner(args?.ownerId)
    await this.client_.request(Ops.RELEASE_ALL, { owner })
  }

  /**
   * Resolves once connected to the bridge; rejects after timeoutMs (default connectTimeoutMs)
   * or at once when the bridge refused the token.
   */
  ready(timeoutMs) {
    return this.client_.ready(timeoutMs)
  }

  /** Closes the client: running jobs' signals abort, then the connection closes (1000); pending calls reject; no more reconnects. */
  close() {
    return this.client_.close()
  }

  /** Alias of close(), the hook newer Medusa versions call on providers at shutdown. */
  shutdown() {
    return this.close()
  }
}

/**
 * A provider for any Node app: `createBridgeLockingProvider({url, token})`. It connects in the
 * background; calls wait for the connection. Call close() when done.
 */
function createBridgeLockingProvider(options) {
  if (!options?.url) {
    throw new Error(`locking-bridge: createBridgeLockingProvider needs a "url" option, e.g. {url: "ws://127.0.0.1:7420/ws", token: "…"}`)
  }
  const client = new BridgeConnection(options)
  return new BridgeLockingProvider(
    { [CLIENT_REGISTRATION]: client, [OPTIONS_REGISTRATION]: options, logger: options.logger },
    {}
  )
}

module.exports = {
  BridgeLockingProvider,
  createBridgeLockingProvider,
  validateOptions,
  takesNoArguments,
  CLIENT_REGISTRATION,
  OPTIONS_REGISTRATION,
}
