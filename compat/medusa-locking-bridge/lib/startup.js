"use strict"

// The start-up check of the Medusa loader: a provider that no bridge accepts fails `medusa start`
// at once, with one line naming the option to fix, instead of failing every call later. Each URL
// gets a verdict: the client's own first round of attempts gives those it tried (up to the first
// that welcomed it); the URLs after that one are probed, so that a misconfiguration that would
// only bite at failover (a bridge that refuses the token, serves another namespace, or has a
// certificate the client does not accept) is found now.

const { BridgeSocket, domainMismatch } = require("./socket")
const { heartbeatInterval } = require("./deadlines")
const { rulesOf } = require("./protocol")
const { reasonOf } = require("./errors")

/** Node's codes of a certificate chain the client does not trust: the CA is missing (wsOptions.ca). */
const TLS_UNTRUSTED = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_UNTRUSTED",
  "CERT_SIGNATURE_FAILURE",
  "CERT_CHAIN_TOO_LONG",
  "INVALID_CA",
])
/** Node's codes of a certificate outside its validity period (the bridge's --tls-cert). */
const TLS_EXPIRED = new Set(["CERT_HAS_EXPIRED", "CERT_NOT_YET_VALID"])
/** Node's code of a certificate that does not name the URL's host. */
const TLS_HOSTNAME = "ERR_TLS_CERT_ALTNAME_INVALID"

/**
 * Opens one WebSocket to target as the client would, and resolves once it is gone: null when the
 * bridge welcomed it with a heartbeat the client can work with, in the lock domain of the
 * client's first welcome (it is closed with 1000 at once: it holds nothing), else the error that
 * ended it. It takes at most the client's handshakeTimeoutMs for the upgrade and as much for the
 * welcome.
 *
 * @param {import("./connection").BridgeConnection} client
 * @param {{url: URL, display: string}} target
 */
function probe(client, target) {
  return new Promise((resolve) => {
    let refusal = null
    const socket = new BridgeSocket(client.socketOptions(target), {
      welcome: (msg) => {
        try {
          heartbeatInterval(client.heartbeatIntervalMs, rulesOf(msg), target.display)
        } catch (err) {
          refusal = err
        }
        refusal ??= client.domain && domainMismatch(client.domain, msg, target.display)
        socket.close(1000, "start-up check")
      },
      frame: () => {},
      peerClose: () => {},
      end: (error) => resolve(refusal ?? (socket.welcomed ? null : error ?? new Error("the connection closed"))),
    })
  })
}

/**
 * Waits for the client's first round of attempts, then probes the URLs it did not reach; resolves
 * the verdict of startupVerdict. Bounded by the handshake timeouts: each URL's attempt takes at
 * most handshakeTimeoutMs for the upgrade and as much for the welcome (twice handshakeTimeoutMs).
 *
 * @param {import("./connection").BridgeConnection} client
 */
async function checkAtStartup(client) {
  const round = await client.firstRound
  const verdicts = new Map(round.failures.map((f) => [f.target, f.error]))
  if (round.welcomed) {
    verdicts.set(round.welcomed, null)
    const rest = client.targets.filter((t) => !verdicts.has(t))
    const results = await Promise.all(rest.map((t) => probe(client, t)))
    rest.forEach((t, i) => verdicts.set(t, results[i]))
  }
  return startupVerdict(client.targets, verdicts)
}

/**
 * Decides whether the provider can start, from each URL's verdict (null: welcomed; an error:
 * why not; missing: not known). Resolves {error, warnings}:
 *
 * * a fatal error at any URL (a refused token, a server that is not a bridge, a
 *   heartbeatIntervalMs the bridge cannot work with, a bridge of another lock domain, a TLS
 *   certificate that fails verification: see tlsProblem) is the error, even when another URL
 *   works;
 * * no URL welcomed the client: the error lists them with their reasons;
 * * otherwise no error, and one warning line per URL that did not answer (a failover target
 *   that is down now).
 *
 * @param {{display: string}[]} targets
 * @param {Map<object, Error|null>} verdicts
 */
function startupVerdict(targets, verdicts) {
  const failures = targets.filter((t) => verdicts.get(t)).map((t) => ({ target: t, error: verdicts.get(t) }))
  for (const { target, error } of failures) {
    const reason = error.fatal ? withoutPrefix(reasonOf(error)) : tlsProblem(target, error)
    if (reason) return { error: cannotStart(reason, error), warnings: [] }
  }
  if (!targets.some((t) => verdicts.has(t) && verdicts.get(t) === null)) {
    const where =
      failures.length === 1
        ? `${failures[0].target.display}: ${reasonOf(failures[0].error)}`
        : `any of ${failures.map((f) => `${f.target.display} (${reasonOf(f.error)})`).join(", ")}`
    return { error: cannotStart(`no bridge answered at ${where}; check the "url" option (or start the bridge)`, failures[0]?.error), warnings: [] }
  }
  const warnings = failures.map(
    (f) => `locking-bridge: the bridge at ${f.target.display} did not answer at start-up (${reasonOf(f.error)}); the client fails over to it only once it answers`
  )
  return { error: null, warnings }
}

/**
 * What is wrong when err is a failed verification of the TLS certificate of target, naming the
 * option to fix; null for any other error. No retry fixes it by itself, so it is fatal at
 * start-up, also at a failover URL.
 */
function tlsProblem(target, err) {
  const code = err?.code
  const what = `${reasonOf(err)}, ${code}`
  if (TLS_UNTRUSTED.has(code)) {
    return `the bridge at ${target.display} presented a TLS certificate this client does not trust (${what}); give the CA that signed it in the "wsOptions" option (ca)`
  }
  if (code === TLS_HOSTNAME) {
    return `the TLS certificate of the bridge at ${target.display} does not name its host (${what}); check the host in the "url" option (it must be a name the certificate has)`
  }
  if (TLS_EXPIRED.has(code)) {
    return `the TLS certificate of the bridge at ${target.display} has expired or is not valid yet (${what}); renew the bridge's certificate (--tls-cert) or check this machine's clock`
  }
  return null
}

/** The loader's error: one line, "locking-bridge: cannot start: <reason>", caused by cause. */
function cannotStart(reason, cause) {
  return new Error(`locking-bridge: cannot start: ${reason}`, cause ? { cause } : undefined)
}

/** text without this package's "locking-bridge: " prefix (it is put back once, in front). */
function withoutPrefix(text) {
  return text.replace(/^locking-bridge: /, "")
}

module.exports = { checkAtStartup, startupVerdict, probe }
