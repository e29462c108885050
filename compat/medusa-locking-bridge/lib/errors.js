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

/** Stock's "Failed to acquire lock for key" conflict. */
function notAcquired(key) {
  return lockingError(Types.CONFLICT, `Failed to acquire lock for key "${key}"`)
}

/** Stock's "Timed-out acquiring lock." conflict. */
function timedOut() {
  return lockingError(Types.CONFLICT, "Timed-out acquiring lock.")
}

/** Stock's "Lost the lock" conflict, the reason a job's signal is aborted with. */
function lockLost(keys, cause) {
  return lockingError(
    Types.CONFLICT,
    `Lost the lock for key(s) ${quoteKeys(keys)} while the job was still running: the lease expired before it could be renewed. Increase "expire" if the job is expected to run this long.`,
    cause ? { cause } : undefined
  )
}

module.exports = { Types, medusaUtils, lockingError, notAcquired, timedOut, lockLost, quoteKeys }
