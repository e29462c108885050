"use strict"

// The order in which the client tries its bridge URLs (the "url" option, in the order given),
// in rounds:
//
// * a round tries every URL once. The first round starts at the first URL; an attempt that
//   fails is followed at once by the next URL of the round;
// * when the connection to a URL ends (its bridge died) or drains (going_away), the next URL is
//   tried at once. A connection that had proved stable starts a new round of every URL: the
//   ones after it in the order given, then the others, and its own URL last (a bridge that
//   restarts fast, or a flaky link, is found again before any backoff). One that had not proved
//   stable is an attempt of the current round that failed, so a bridge that welcomes and drops
//   at once is not hammered;
// * once every URL of a round failed, the client backs off (its reconnect delays) and the next
//   round starts at the first URL again.
//
// With one URL a round is that URL: every reconnect waits for the backoff, as it always did.

/** The client's URLs and where it is in its current round of attempts. */
class Rotation {
  /** @param {{url: URL, display: string}[]} targets the bridges, in the order given (parseUrls) */
  constructor(targets) {
    this.targets = targets
    this.index = 0 // the URL of the current (or next) attempt
    this.tried = 0 // attempts of the current round so far
    this.failures = [] // {target, error} of the current round's failed attempts
    this.firstSettled = false
    /**
     * Settles once, at the first welcome or when the first round ended without one:
     * {welcomed: the target that welcomed the client or null, failures: [{target, error}]}.
     */
    this.firstRound = new Promise((resolve) => (this.resolveFirst = resolve))
  }

  /** The bridge of the current (or next) attempt. */
  get current() {
    return this.targets[this.index]
  }

  /** The bridge of the next attempt, counted as tried in the current round. */
  next() {
    this.tried++
    return this.current
  }

  /** The current bridge welcomed the client: the round's failures are forgotten. */
  welcomed() {
    this.settleFirst(this.current)
    this.failures = []
  }

  /**
   * The attempt at the current bridge failed with error. Returns {atOnce, fatal}: atOnce when the
   * round has a bridge left (now the current one), to be tried at once; otherwise the round is
   * over and fatal is the first of its errors that no retry fixes by itself (error.fatal: a
   * refused token, a server that is not a bridge), or null.
   */
  failed(error) {
    this.failures.push({ target: this.current, error })
    const fatal = this.failures.find((f) => f.error?.fatal)?.error ?? null
    const atOnce = this.advance()
    return { atOnce, fatal: atOnce ? null : fatal }
  }

  /**
   * The welcomed connection to the current bridge ended or drains. stable: it had proved stable,
   * so a new round of every bridge begins with the next one, this one last (with one URL the
   * round is over: back off). Returns true when the next bridge of the round is to be tried at
   * once, false when the round is over (back off).
   */
  ended(stable) {
    if (stable) {
      this.tried = this.targets.length > 1 ? 0 : 1
      this.failures = []
    }
    return this.advance()
  }

  /** Moves to the next bridge of the round (true), or ends the round (false). */
  advance() {
    if (this.tried < this.targets.length) {
      this.index = (this.index + 1) % this.targets.length
      return true
    }
    this.settleFirst(null)
    this.index = 0
    this.tried = 0
    this.failures = []
    return false
  }

  /** The client was closed (error) before its first round ended: firstRound says so. */
  abandon(error) {
    if (this.firstSettled) return
    this.failures.push({ target: this.current, error })
    this.settleFirst(null)
  }

  /** Settles firstRound (see the constructor) with the bridge that welcomed the client, or null. */
  settleFirst(welcomed) {
    if (this.firstSettled) return
    this.firstSettled = true
    this.resolveFirst({ welcomed, failures: [...this.failures] })
  }
}

module.exports = { Rotation }
