"use strict"

// A fault-injecting TCP proxy for the tests, the Node twin of internal/testsupport/faultproxy: it sits
// between a client and a server (the client and the bridge, or the bridge and Redis) and lets a
// test, per direction, delay, blackhole (keep the sockets open, drop the bytes) or hold (keep the
// bytes until the direction is restored) the traffic, and cut one side or both of the open links.
//
// Directions: "up" is client to server, "down" is server to client, "both" is both. A mode set on
// a direction applies to the links open now and to new ones, until restore().

const net = require("node:net")

const PASS = { kind: "pass" }

/** One proxied connection: the client's socket, the server's socket, and per-direction state. */
class Link {
  constructor(proxy, client) {
    this.proxy = proxy
    this.client = client
    this.server = net.connect(proxy.targetPort, proxy.targetHost)
    this.alive = { client: true, server: true }
    // Per direction: when the last delayed chunk is due (keeps order) and the held chunks.
    this.dirs = { up: { due: 0, held: [] }, down: { due: 0, held: [] } }
    this.pipe("up", this.client, this.server, "server")
    this.pipe("down", this.server, this.client, "client")
  }

  pipe(dir, from, to, toSide) {
    from.on("data", (chunk) => this.forward(dir, to, toSide, chunk))
    const fromSide = toSide === "server" ? "client" : "server"
    const ended = () => {
      if (!this.alive[fromSide]) return
      this.alive[fromSide] = false
      // The end of one side is passed on like its bytes: not through a blackhole or a hold.
      const mode = this.proxy.modes[dir]
      if (mode.kind === "pass") this.kill(toSide)
      else if (mode.kind === "delay") setTimeout(() => this.kill(toSide), mode.ms).unref()
      this.forget()
    }
    from.on("close", ended)
    from.on("error", ended)
  }

  forward(dir, to, toSide, chunk) {
    const mode = this.proxy.modes[dir]
    const write = () => {
      if (this.alive[toSide]) to.write(chunk)
    }
    if (mode.kind === "pass") write()
    else if (mode.kind === "delay") {
      const state = this.dirs[dir]
      const now = Date.now()
      state.due = Math.max(now + mode.ms, state.due)
      setTimeout(write, state.due - now).unref()
    } else if (mode.kind === "hold") this.dirs[dir].held.push(chunk)
    // blackhole: dropped
  }

  /** Delivers what a held direction kept. */
  release(dir) {
    const to = dir === "up" ? this.server : this.client
    const side = dir === "up" ? "server" : "client"
    for (const chunk of this.dirs[dir].held.splice(0)) if (this.alive[side]) to.write(chunk)
  }

  kill(side) {
    if (!this.alive[side] && this[side].destroyed) return
    this.alive[side] = false
    this[side].destroy()
    this.forget()
  }

  forget() {
    if (!this.alive.client && !this.alive.server) this.proxy.links.delete(this)
  }
}

class FaultProxy {
  /**
   * Starts a proxy on a free loopback port forwarding to targetPort on 127.0.0.1.
   * @returns {Promise<FaultProxy>}
   */
  static async start(targetPort, targetHost = "127.0.0.1") {
    const proxy = new FaultProxy(targetPort, targetHost)
    await new Promise((resolve) => proxy.server.listen(0, "127.0.0.1", resolve))
    proxy.port = proxy.server.address().port
    proxy.url = `ws://127.0.0.1:${proxy.port}/ws`
    proxy.addr = `127.0.0.1:${proxy.port}`
    return proxy
  }

  constructor(targetPort, targetHost) {
    this.targetPort = targetPort
    this.targetHost = targetHost
    this.links = new Set()
    this.modes = { up: PASS, down: PASS }
    this.refusing = false
    this.accepted = 0 // connections accepted so far, refused ones included
    this.server = net.createServer((client) => {
      this.accepted++
      if (this.refusing) {
        client.destroy()
        return
      }
      this.links.add(new Link(this, client))
    })
  }

  dirs(dir) {
    if (dir === "both") return ["up", "down"]
    if (dir !== "up" && dir !== "down") throw new Error(`faultproxy: direction must be "up", "down" or "both", got ${dir}`)
    return [dir]
  }

  /** Delivers every chunk of dir ms after it arrives, in order. */
  delay(dir, ms) {
    for (const d of this.dirs(dir)) this.modes[d] = { kind: "delay", ms }
  }

  /** Drops every byte of dir; the sockets stay open (a silent link). */
  blackhole(dir) {
    for (const d of this.dirs(dir)) this.modes[d] = { kind: "blackhole" }
  }

  /** Keeps the bytes of dir until restore(dir) (or a cut, which loses them). */
  hold(dir) {
    for (const d of this.dirs(dir)) this.modes[d] = { kind: "hold" }
  }

  /** Back to passing bytes on dir; held bytes are delivered now. */
  restore(dir = "both") {
    for (const d of this.dirs(dir)) {
      this.modes[d] = PASS
      for (const link of this.links) link.release(d)
    }
  }

  /**
   * Cuts the open links: side "client" closes the client's socket only (the server keeps an
   * open, silent socket), "server" the server's only, "both" both.
   */
  cut(side = "both") {
    for (const link of [...this.links]) {
      if (side === "client" || side === "both") link.kill("client")
      if (side === "server" || side === "both") link.kill("server")
    }
  }

  /** While on, new connections are accepted and closed at once (a server that is down). */
  refuse(on = true) {
    this.refusing = on
  }

  /** Open links (at least one side open). */
  connections() {
    return this.links.size
  }

  async stop() {
    this.restore()
    this.cut("both")
    await new Promise((resolve) => this.server.close(resolve))
  }
}

module.exports = { FaultProxy }
