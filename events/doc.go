// Package events carries lock events between processes on Redis pub/sub, so the console can
// show what every provider (Go services, the bridge, the CLI, the demo) is doing as it happens.
//
// The channel of a namespace is "locktui:events:" + namespace (ChannelFor); it lies outside the
// namespace, so it never shows up as a lock. Each message is one JSON object (Event):
//
//	{"v":1,"kind":"acquired","key":"cart:1","owner":"execute:…","ts":1700000000000,
//	 "wait_ms":12,"held_ms":0,"source":"go","host":"web-1","pid":4242}
//
// A Publisher is a provider.Observer: pass it as provider.Options.Observer and every event the
// provider emits is published from a background goroutine, never blocking the lock calls. A
// Subscription decodes the messages of one namespace onto a channel.
//
// Pub/sub is fire-and-forget: events are advisory, for display. Nothing is retried or stored,
// an event published while no one listens is gone, and the lock state in Redis stays the truth.
package events
