// Package bridge serves the Go lock provider over WebSocket, so that Node processes (through
// compat/medusa-locking-bridge) share locks with Go services and with stock
// @medusajs/locking-redis processes on the same Redis.
//
// The wire protocol is specified in docs/bridge-protocol.md (version 1): JSON text frames, one
// request per frame with a client-chosen id, many requests in flight per connection, answers in
// any order, and a lease_lost event pushed when a lease is lost.
//
// Structure, after gorilla/websocket's chat example: every connection has one reader goroutine
// (readPump), which decodes frames and starts one goroutine per request, bounded by the
// connection's in-flight limit; and one writer goroutine (writePump), through which every frame
// to that connection goes, pings included. The Server keeps the set of connections for metrics
// and graceful shutdown.
//
// Leases belong to their connection: they are renewed by the provider while the connection
// lives, and released owner-checked as soon as it ends (close, network error, missed heartbeats)
// or when the server shuts down.
package bridge
