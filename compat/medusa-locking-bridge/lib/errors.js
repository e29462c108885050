"use strict"

// Errors the provider throws. With the optional peer @medusajs/framework installed they are
// MedusaError instances, exactly as stock @medusajs/locking-redis throws them; without it they are
// plain Errors carrying the same `type` and `message`. One rule, errorType, gives every one of
// them its type: lock conflicts and mistakes in the caller's own arguments keep Medusa's types,
// every other error is a LOCKING_BRIDGE_ERROR, which Medusa shows an HTTP client as its generic
// 500.

const { Ops, Codes } = require("./protocol")

/** The Medusa error types this package keeps (the values of MedusaError.Types). */
const Types = Object.freeze({
  CONFLICT: "conflict",
  INVALID_DATA: "invalid_data",
})

/**
 * The type of every error of this package that is neither a lock conflict nor a mistake in the
 * caller's own arguments: the server-side failures (no bridge answers, a refused token, a lost
 * connection, an unknown outcome, the client closed, a Redis error at the bridge, …). Medusa does
 * not know this type, so its HTTP error handler answers the client with its generic 500 ("An
 * unknown error occurred.") and passes nothing of the error on, while the server log, which
 * Medusa writes for every 500, gets the whole error: its message and its `bridgeCode`.
 */
const LOCKING_BRIDGE_ERROR = "locking_bridge_error"

/**
 * The codes of "invalid_data" errors that are mistakes in the caller's own arguments: too many
 * keys for the bridge (its max_keys; the bridge's code, also checked by this client before
 * sending) and a request larger than the bridge reads (its max_frame_bytes; this client's
 * check). The bridge's other invalid_data codes (bad_request, unknown_op, duplicate_id) say that
 * this client and the bridge do not understand each other: a server-side failure.
 */
const CALLER_CODES = new Set([Codes.TOO_MANY_KEYS, "frame_too_large"])

/**
 * The rule that gives every error of this package its type: a lock conflict keeps "conflict"
 * (stock's; Medusa answers 409); a mistake in the caller's own arguments keeps "invalid_data"
 * (400, with its message): the ones this client finds itself (no code: an empty ownerId, an
 * infinite expire) and those of CALLER_CODES; anything else, whatever type it was reported with
 * (the bridge's "unexpected_state", "not_allowed", an "invalid_data" such as bad_request, …, or
 * none), is LOCKING_BRIDGE_ERROR.
 *
 * @param {unknown} reported the type the bridge reported, or the one a call site asks for
 * @param {unknown} [code] the error's code (the bridge's, or this client's bridgeCode), if any
 */
function errorType(reported, code) {
  if (reported === Types.CONFLICT) return Types.CONFLICT
  if (reported === Types.INVALID_DATA && (code === undefined || CALLER_CODES.has(code))) return Types.INVALID_DATA
  return LOCKING_BRIDGE_ERROR
}

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
 * Builds an error of the type errorType(type, extra.bridgeCode) gives: a MedusaError when the
 * framework is installed, else an Error with the same `type` and `message`. `extra` properties
 * (for example `bridgeCode`, `cause`) are copied onto it.
 *
 * @param {string} type Types.CONFLICT, Types.INVALID_DATA, LOCKING_BRIDGE_ERROR, or a bridge's type
 * @param {string} message
 * @param {Record<string, unknown>} [extra]
 */
function lockingError(type, message, extra) {
  const MedusaError = medusaUtils()?.MedusaError
  const decided = errorType(type, extra?.bridgeCode)
  let err
  if (MedusaError) {
    err = new MedusaError(decided, message)
  } else {
    err = new Error(message)
    err.type = decided
  }
  if (Error.captureStackTrace) Error.captureStackTrace(err, lockingError)
  if (extra) Object.assign(err, extra)
  return err
}

/**
 * A server-side failure of this package (type LOCKING_BRIDGE_ERROR) with its `bridgeCode`,
 * e.g. "not_connected", "connection_lost", "closed".
 *
 * @param {string} bridgeCode
 * @param {string} message one line, naming the bridge URL concerned and what to do
 * @param {Record<string, unknown>} [extra] more properties (`cause`, `fatal`)
 */
function bridgeFailure(bridgeCode, message, extra) {
  return lockingError(LOCKING_BRIDGE_ERROR, message, { bridgeCode, ...extra })
}

/** text on one line: every run of whitespace (newlines included) becomes one space. */
function oneLine(text) {
  return String(text).replace(/\s+/g, " ").trim()
}

/**
 * What went wrong, on one line, for a message: err's message, else its code or the messages of
 * the errors it aggregates (Node's connect error for a name with several addresses has none).
 */
function reasonOf(err) {
  const text = err?.message || err?.code || err?.errors?.map((e) => e?.message || e?.code).join(", ") || String(err)
  return oneLine(text)
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
 * Rebuilds a bridge error (a reply's or an event's `error`) as a (Medusa)Error, typed by
 * errorType. Conflicts carry the bridge's message (stock's, verbatim) and no bridgeCode, exactly
 * as stock throws them; every other error keeps the bridge's code as `bridgeCode`
 * (outcome_unknown, redis_error, key_forbidden, too_many_renewals, too_many_keys, bad_request,
 * …). An invalid_data of the bridge without a code counts as the bridge's, not the caller's.
 */
function bridgeError(error) {
  const code = typeof error?.code === "string" ? error.code : undefined
  const type = errorType(error?.type, code ?? "")
  const message = typeof error?.message === "string" && error.message ? error.message : "locking-bridge: the bridge reported an error without a message"
  return lockingError(type, message, type === Types.CONFLICT ? undefined : { bridgeCode: code })
}

/**
 * The error of a request whose reply was lost and whose outcome the bridge cannot tell any more
 * (bridgeCode outcome_unknown). A release or releaseAll in that state is never sent again:
 * another process with the same owner may hold a key by now.
 *
 * @param {string} op Ops.RELEASE, Ops.RELEASE_ALL or Ops.ACQUIRE
 * @param {{keys?: string[], owner?: string}} fields the request's fields
 * @param {string} why what happened, e.g. "the bridge no longer knows the request"
 */
function outcomeUnknown(op, fields, why, cause) {
  const owner = fields.owner ?? "*"
  const what =
    op === Ops.RELEASE_ALL
      ? `releaseAll of owner "${owner}"`
      : `${op} of key(s) ${quoteKeys(fields.keys ?? [])} for owner "${owner}"`
  const tail = op === Ops.ACQUIRE ? "" : "; it was not sent again, since another process with the same owner may hold the key(s) by now"
  return bridgeFailure(Codes.OUTCOME_UNKNOWN, `locking-bridge: the outcome of the ${what} is unknown: ${why}${tail}`, cause ? { cause } : undefined)
}

module.exports = {
  Types,
  LOCKING_BRIDGE_ERROR,
  CALLER_CODES,
  errorType,
  medusaUtils,
  lockingError,
  bridgeFailure,
  oneLine,
  reasonOf,
  lockLost,
  quoteKeys,
  bridgeError,
  outcomeUnknown,
}
