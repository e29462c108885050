// Package faultproxy is an in-process TCP proxy for tests that injects network faults between a
// client and a server: the Node client and the bridge, the bridge and Redis, the Go provider and
// Redis.
//
// We write our own rather than use Shopify/toxiproxy because it must be smaller and clearer (one
// package, no daemon, no HTTP API, no toxics to configure) and because it must support two faults
// toxiproxy does not have: a one-sided cut, where one peer sees the connection close while the
// other keeps a silent open socket, and losing exactly one reply (see LoseReplyTo).
//
// A Proxy listens on a free loopback port (Addr) and forwards every connection it accepts to
// one target address. Each direction of a link, Upstream (client to server) and Downstream
// (server to client), has one mode at a time, which applies to the connections already open and
// to new ones:
//
//   - pass (the default, and after Restore): bytes are forwarded as they arrive;
//   - Delay: every chunk read from the sender is delivered d later, in order, without limiting
//     throughput beyond that;
//   - Blackhole: bytes read from the sender are discarded, and nothing is closed: a silent link.
//
// Faults on the connections open now: Cut closes one side (the other keeps an open socket that
// receives nothing and whose writes are discarded), CutAll closes both. Faults on new
// connections: Refuse (accepted and closed at once: a server that is down) and Hold (accepted
// and never connected: a hung server).
//
// A direction buffers at most 64 MiB (bytes delayed, or waiting for a receiver that does not
// read); beyond that the proxy stops reading the sender, which then blocks as it would on a real
// link. An end of stream (FIN) from one peer is passed on as a half-close, in order with the
// bytes before it; a blackholed direction swallows it too.
//
// Tests use StartT, which closes the proxy when the test ends:
//
//	px := faultproxy.StartT(t, redisAddr)
//	client := redis.NewClient(&redis.Options{Addr: px.Addr()})
//	px.Blackhole(faultproxy.Downstream) // Redis runs the commands; the client hears nothing
package faultproxy
