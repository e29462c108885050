"use strict"

// Errors the provider throws. With the optional peer @medusajs/framework installed they are
// MedusaError instances, exactly as stock @medusajs/locking-redis throws them; without it they are
// plain Errors carrying the same `type` and `message`.

/** Medusa's error types used by this package (the values of MedusaError.Types). */
const Types = Object.freeze({
  CONFLICT: "conflict",
  INVALID_DATA: "invalid_data",
  INVALID_ARGUMENT: "invalid_argument",
  NOT_FOUND: "not_found",
  NOT_ALLOWED: "not_allowed",
  UNAUTHORIZED: "unauthorized",
  UNEXPECTED_STATE: "unexpected_state",
})

let framework // undefined: not looked up yet; null: not installed

/**
 * Returns @medusajs/framework/utils, or null when the package is not installed. A framework that
 * is installed but fails to load (a missing transitive dependency, a syntax error) is an error
 * the user must see, so only the framework's own absence counts as "not installed".
 */
function medusaUtils() {
  if (framework === undefined) {
    try {
      framework = require("@medusajs/framework/utils")
    } catch (err) {
      if (err?.code !== "MODULE_NOT_FOUND" || !String(err.message).includes("'@medusajs/framework")) {
        throw err
      }
      framework = null
    }
  }
  return framework
}

/**
 * Builds an error of a Medusa type: a MedusaError when the framework is installed, else an Error
 * with the same `type` and `message`. `extra` properties (for example `bridgeCode`, `cause`)
 * are copied onto it.
 *
 * @param {string} type
 * @param {string} message
 * @param {Record<string, unknown>} [extra]
 */
function lockingError(type, message, extra) {
  const MedusaError = medusaUtils()?.MedusaError
  let err
  if (MedusaError) {
    err = new MedusaError(type, message)
  } else {
    err = new Error(message)
    err.type = type
  }
  if (Error.captureStackTrace) Error.captureStackTrace(err, lockingError)
  if (extra) Object.assign(err, extra)
  return err
}

/** Quotes keys the way stock does in its messages: "a", "b". */
function quoteKeys(keys) {
  return keys.map((k) => `"${k}"`).join(", ")
}

/**
 * The "Lost the lock" conflict a job's signal is aborted with when the client itself finds the
 * lease lost (its deadline passed, the connection ended). Its message is the one the bridge sent
 * with the lease (`lost_message`: stock's text, composed by the Go provider, which this package
 * never copies); a bridge that sends none (older than this package) gets a message of this
 * package's own that says so. The bridge's lease_lost event carries its message too, used as it
 * comes.
 *
 * @param {string[]} keys the lease's keys, in the caller's order, once each
 * @param {string | undefined} message the lease's lost_message
 */
function lockLost(keys, message, cause) {
  const text =
    message ||
    `locking-bridge: lost the lock for key(s) ${quoteKeys(keys)} while the job was still running (the bridge sent no lost_message with the lease, so this is not stock's message: upgrade the bridge)`
  return lockingError(Types.CONFLICT, text, cause ? { cause } : undefined)
}

/**
 * Rebuilds a bridge error (a reply's or an event's `error`) as a (Medusa)Error. Conflicts carry
 * the bridge's message (stock's, verbatim) and no bridgeCode, exactly as stock throws them; every
 * other error keeps the bridge's code as `bridgeCode` (outcome_unknown, shutting_down,
 * too_many_renewals, key_forbidden, …).
 */
function bridgeError(error) {
  const type = typeof error?.type === "string" && error.type ? error.type : Types.UNEXPECTED_STATE
  const message = typeof error?.message === "string" && error.message ? error.message : "locking-bridge: the bridge reported an error without a message"
  return lockingError(type, message, type === Types.CONFLICT ? undefined : { bridgeCode: error?.code })
}

/**
 * The error of a request whose reply was lost and whose outcome the bridge cannot tell any more
 * (type unexpected_state, bridgeCode outcome_unknown). A release or releaseAll in that state is
 * never sent again: another process with the same owner may hold a key by now.
 *
 * @param {string} op "release", "release_all" or "acquire"
 * @param {{keys?: string[], owner?: string}} fields the request's fields
 * @param {string} why what happened, e.g. "the bridge no longer knows the request"
 */
function outcomeUnknown(op, fields, why, cause) {
  const owner = fields.owner ?? "*"
  const what =
    op === "release_all"
      ? `releaseAll of owner "${owner}"`
      : `${op === "acquire" ? "acquire" : "release"} of key(s) ${quoteKeys(fields.keys ?? [])} for owner "${owner}"`
  const tail = op === "acquire" ? "" : "; it was not sent again, since another process with the same owner may hold the key(s) by now"
  return lockingError(Types.UNEXPECTED_STATE, `locking-bridge: the outcome of the ${what} is unknown: ${why}${tail}`, {
    bridgeCode: "outcome_unknown",
    ...(cause ? { cause } : {}),
  })
}

module.exports = { Types, medusaUtils, lockingError, lockLost, quoteKeys, bridgeError, outcomeUnknown }
