// Package bridge serves the Go lock provider over WebSocket, so that Node processes (through
// compat/medusa-locking-bridge) share locks with Go services and with stock
// @medusajs/locking-redis processes on the same Redis.
//
// The wire protocol is specified in docs/bridge-protocol.md (version 3): JSON text frames, each
// one request or a batch of them (a JSON array) with client-chosen ids, many requests in flight
// per connection, answers in any order and in batches, lease_lost and going_away events, and sessions that a reconnecting client resumes
// to learn the outcome of the requests it had in flight.
//
// Structure, after gorilla/websocket's chat example: every connection has one reader goroutine
// (readPump), which decodes frames and hands each request to a goroutine of the connection's
// pool (workers: an idle one, else a new one), bounded by the connection's in-flight limit; and
// one writer goroutine (writePump), the only one that writes
// to the socket: text frames, pongs and the close frame. The Server keeps the set of
// connections (for the connection limits and the shutdown drain) and the sessions.
//
// Leases belong to their connection: they are renewed by the provider while the connection
// lives. When it ends they are freed at once if the client said it holds none of them (a close
// with 1000, a resume of its session), otherwise ClientTimeout after the last frame the
// connection received, by when the client has stopped believing (docs/safety.md).
package bridge
