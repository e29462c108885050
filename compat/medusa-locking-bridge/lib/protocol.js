"use strict"

// The bridge protocol as this client knows it (docs/bridge-protocol.md), from two sources and no
// third:
//
// * its vocabulary, from ./protocol.json: the version, the WebSocket subprotocol, the
//   Locktui-Client header, the op names, the events, the error codes and the states of a resumed
//   request. `go generate ./bridge` writes that file from the bridge's Go constants, and a Go test
//   fails when it is stale; no other file of lib/ spells one of these names (test/protocol.test.js
//   checks);
// * the rules a bridge decides at run time, from its welcome (rulesOf): its limits, its heartbeat
//   and margin, the largest expire or timeout, whether the empty owner is allowed. A bridge older
//   than one of them does not announce it; the client then assumes what such bridges did (the
//   file's fallbacks, generated from the Go side too).

const spec = require("./protocol.json")

/** The protocol version the welcome must carry. */
const PROTOCOL_VERSION = spec.version
/** The WebSocket subprotocol of this version. */
const SUBPROTOCOL = spec.subprotocol
/** The upgrade header in which the client names its process (the client's hello). */
const CLIENT_HEADER = spec.client_header
/** The ops, e.g. Ops.LEASE_RELEASE is "lease_release". */
const Ops = Object.freeze({ ...spec.ops })
/** The type of the messages without an id: the welcome and the events. */
const Events = Object.freeze({ ...spec.events })
/** The bridge's error codes. */
const Codes = Object.freeze({ ...spec.codes })
/** The states of a request in a resume reply. */
const ResumeStates = Object.freeze({ ...spec.resume_states })
/** What the client assumes of a welcome that lacks a value (a bridge older than the value). */
const FALLBACKS = Object.freeze({ ...spec.fallbacks })

const positive = (v) => typeof v === "number" && Number.isFinite(v) && v > 0

/**
 * Why welcome's run-time rules cannot be used, or null. heartbeat.interval_ms and timeout_ms must
 * be positive; an announced heartbeat.margin_ms must be positive and below timeout_ms, an
 * announced limits.max_seconds positive: a client that followed other values could not keep its
 * leases certain, or could send nothing.
 */
function rulesProblem(welcome) {
  const hb = welcome.heartbeat
  if (!(positive(hb?.interval_ms) && positive(hb?.timeout_ms))) return "a welcome without a valid heartbeat"
  if (hb.margin_ms !== undefined && !(positive(hb.margin_ms) && hb.margin_ms < hb.timeout_ms)) {
    return `a welcome with heartbeat.margin_ms ${JSON.stringify(hb.margin_ms)} (it must be above 0 and below timeout_ms ${hb.timeout_ms})`
  }
  const maxSeconds = welcome.limits?.max_seconds
  if (maxSeconds !== undefined && !positive(maxSeconds)) return `a welcome with limits.max_seconds ${JSON.stringify(maxSeconds)}`
  return null
}

/**
 * The rules of a welcome that passed rulesProblem, each as the bridge announced it or, from a
 * bridge that does not announce it, its fallback:
 *
 * * intervalMs, timeoutMs: heartbeat.interval_ms and timeout_ms (every v2 bridge sends them);
 * * marginMs: heartbeat.margin_ms, else timeout_ms / FALLBACKS.heartbeat_margin_divisor;
 * * maxSeconds: limits.max_seconds, else FALLBACKS.max_seconds;
 * * maxKeys, maxFrameBytes: limits.max_keys and max_frame_bytes, else undefined (not checked
 *   by the client: the bridge refuses);
 * * maxInFlight: limits.max_in_flight, else FALLBACKS.max_in_flight;
 * * emptyOwnerAllowed: empty_owner_allowed === true (older bridges refuse the empty owner).
 */
function rulesOf(welcome) {
  const hb = welcome.heartbeat
  const limits = welcome.limits ?? {}
  return Object.freeze({
    intervalMs: hb.interval_ms,
    timeoutMs: hb.timeout_ms,
    marginMs: hb.margin_ms ?? hb.timeout_ms / FALLBACKS.heartbeat_margin_divisor,
    maxSeconds: limits.max_seconds ?? FALLBACKS.max_seconds,
    maxKeys: positive(limits.max_keys) ? limits.max_keys : undefined,
    maxFrameBytes: positive(limits.max_frame_bytes) ? limits.max_frame_bytes : undefined,
    maxInFlight: positive(limits.max_in_flight) ? limits.max_in_flight : FALLBACKS.max_in_flight,
    emptyOwnerAllowed: welcome.empty_owner_allowed === true,
  })
}

module.exports = { PROTOCOL_VERSION, SUBPROTOCOL, CLIENT_HEADER, Ops, Events, Codes, ResumeStates, FALLBACKS, rulesProblem, rulesOf }
