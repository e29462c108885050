"use strict"

const os = require("node:os")
const path = require("node:path")

// Connection options: the bridge URL and the millisecond tuning knobs, with their defaults.

/** Longest delay setTimeout accepts; anything longer counts as "no limit". */
const MAX_TIMER_MS = 2 ** 31 - 1

/**
 * Client defaults, all in milliseconds. heartbeatIntervalMs has none: the client pings at the
 * interval the bridge's welcome asks for (heartbeat.interval_ms) unless the option is set.
 */
const DEFAULTS = Object.freeze({
  connectTimeoutMs: 3000,
  handshakeTimeoutMs: 10000,
  reconnectMinDelayMs: 100,
  reconnectMaxDelayMs: 5000,
  heartbeatIntervalMs: undefined,
})

/** Parses the bridge URL: ws(s):// or http(s)://, path /ws when none is given. */
function parseUrl(url) {
  if (typeof url !== "string" || url === "") {
    throw new Error(`locking-bridge: the "url" option is required, e.g. "ws://127.0.0.1:7420/ws"`)
  }
  let u
  try {
    u = new URL(url)
  } catch {
    throw new Error(`locking-bridge: the "url" option is not a valid URL: ${JSON.stringify(url)}`)
  }
  const schemes = { "ws:": "ws:", "wss:": "wss:", "http:": "ws:", "https:": "wss:" }
  if (!schemes[u.protocol]) {
    throw new Error(`locking-bridge: the "url" option must start with ws://, wss://, http:// or https://, got ${JSON.stringify(url)}`)
  }
  u.protocol = schemes[u.protocol]
  if (u.pathname === "" || u.pathname === "/") u.pathname = "/ws"
  return u
}

/** The URL without credentials, for messages. */
function describeUrl(u) {
  const copy = new URL(u.href)
  if (copy.username || copy.password) {
    copy.username = "***"
    copy.password = ""
  }
  return copy.href
}

/** Reads a positive number of milliseconds option, or its default (undefined: none). */
function msOption(options, name) {
  const v = options[name]
  if (v === undefined || v === null) return DEFAULTS[name]
  if (typeof v !== "number" || !(v > 0)) {
    throw new Error(`locking-bridge: the "${name}" option must be a positive number of milliseconds, got ${JSON.stringify(v)}`)
  }
  return v
}

/** The upgrade header in which the client names its process (docs/bridge-protocol.md). */
const CLIENT_HEADER = "Locktui-Client"

/**
 * The client's hello: the value of CLIENT_HEADER, naming this process for the holder records of
 * its locks: this host, this pid and the "program" option, else the name of the script Node
 * runs (process.argv[1]), else process.title.
 */
function clientHello(options) {
  const program = options.program ?? (process.argv[1] ? path.basename(process.argv[1]) : process.title)
  if (typeof program !== "string") {
    throw new Error(`locking-bridge: the "program" option must be a string, got ${JSON.stringify(program)}`)
  }
  return new URLSearchParams({ host: os.hostname(), pid: String(process.pid), program }).toString()
}

module.exports = { DEFAULTS, MAX_TIMER_MS, CLIENT_HEADER, parseUrl, describeUrl, msOption, clientHello }
