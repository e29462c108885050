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

/**
 * Parses one bridge URL: ws(s):// or http(s)://, path /ws when none is given, no fragment. label
 * names it in the one-line error thrown for a bad one (`the "url" option`, or `URL 2 of the
 * "url" option`). The error never shows what was given beyond describeUrl's form: an entry that
 * does not parse is named by its label only, since it may hold credentials.
 */
function parseUrl(url, label = `the "url" option`) {
  if (typeof url !== "string" || url === "") {
    throw new Error(`locking-bridge: ${label} is required, e.g. "ws://127.0.0.1:7420/ws"`)
  }
  let u
  try {
    u = new URL(url)
  } catch {
    throw new Error(`locking-bridge: ${label} is not a valid URL (the entry is not shown: it may contain credentials)`)
  }
  const schemes = { "ws:": "ws:", "wss:": "wss:", "http:": "ws:", "https:": "wss:" }
  if (!schemes[u.protocol]) {
    throw new Error(`locking-bridge: ${label} must start with ws://, wss://, http:// or https://, got ${JSON.stringify(describeUrl(u))}`)
  }
  // A "#" in href is the fragment's (elsewhere the serializer escapes it), also an empty one.
  if (u.href.includes("#")) {
    throw new Error(`locking-bridge: ${label} must not have a fragment (#…): a WebSocket URL cannot carry one`)
  }
  u.protocol = schemes[u.protocol]
  if (u.pathname === "" || u.pathname === "/") u.pathname = "/ws"
  return u
}

/** What kind of value v is, for a message that must not show it: undefined, null, "a number", … */
function kindOf(v) {
  if (v === undefined || v === null) return String(v)
  if (Array.isArray(v)) return "an array"
  if (v === "") return "an empty string"
  const type = typeof v
  return `${/^[aeiou]/.test(type) ? "an" : "a"} ${type}`
}

/**
 * The entries of the "url" option: an array as given, or a string split at its commas (for
 * environment variables), each entry trimmed and empty ones dropped (a trailing comma).
 */
function urlEntries(option) {
  if (option === undefined || option === null) return []
  if (Array.isArray(option)) return option
  if (typeof option !== "string") {
    throw new Error(`locking-bridge: the "url" option must be a URL, an array of URLs or a string of URLs separated by commas, got ${kindOf(option)}`)
  }
  return option.split(",").map((s) => s.trim()).filter((s) => s !== "")
}

/**
 * Parses the "url" option into the bridges the client tries, in the order given:
 * [{url, display}], at least one, duplicates dropped. Throws one line naming the option (and,
 * in a list, the position of the URL at fault).
 */
function parseUrls(option) {
  const entries = urlEntries(option)
  if (entries.length === 0) parseUrl(undefined)
  const targets = []
  entries.forEach((entry, i) => {
    const label = entries.length === 1 ? `the "url" option` : `URL ${i + 1} of the "url" option`
    if (typeof entry !== "string" || entry.trim() === "") {
      throw new Error(`locking-bridge: ${label} must be a non-empty string, got ${kindOf(typeof entry === "string" ? "" : entry)}`)
    }
    const url = parseUrl(entry.trim(), label)
    if (!targets.some((t) => t.url.href === url.href)) targets.push({ url, display: describeUrl(url) })
  })
  return targets
}

/**
 * The URL for messages and logs (every message names a bridge this way): without its userinfo
 * (user:password@) and with every query value shown as *** (a parameter without "=" is shown as
 * *** whole, since it may be a secret itself); the fragment, if any, is dropped.
 */
function describeUrl(u) {
  const copy = new URL(u.href)
  copy.username = ""
  copy.password = ""
  copy.hash = ""
  const query = copy.search.slice(1)
  copy.search = ""
  let text = copy.href
  if (query !== "") {
    text += "?" + query.split("&").map((part) => (part.includes("=") ? `${part.slice(0, part.indexOf("="))}=***` : part === "" ? "" : "***")).join("&")
  }
  return text
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

/**
 * The client's hello: the value of the upgrade header CLIENT_HEADER (lib/protocol.js), naming
 * this process for the holder records of its locks: this host, this pid and the "program"
 * option, else the name of the script Node runs (process.argv[1]), else process.title.
 */
function clientHello(options) {
  const program = options.program ?? (process.argv[1] ? path.basename(process.argv[1]) : process.title)
  if (typeof program !== "string") {
    throw new Error(`locking-bridge: the "program" option must be a string, got ${JSON.stringify(program)}`)
  }
  return new URLSearchParams({ host: os.hostname(), pid: String(process.pid), program }).toString()
}

module.exports = { DEFAULTS, MAX_TIMER_MS, parseUrl, parseUrls, describeUrl, msOption, clientHello }
