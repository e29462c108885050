// Package bench measures lock implementations side by side against one Redis: the Go provider
// in-process, and Node implementations (stock @medusajs/locking-redis, and the bridge client
// compat/medusa-locking-bridge talking to a Go bridge that StartBridge builds and starts for the
// run) as child processes running compat/bench scripts.
//
// Every implementation runs the same scenarios with the same worker loop (see Scenario) and
// reports the same raw observations (Raw); the metrics are then computed here, once, from those
// observations, so "p99" or "fairness" mean exactly the same thing for every implementation.
// MetricsDoc describes each metric; it is embedded in the report.
//
// Adding an implementation is one entry in Implementations: an in-process Go Impl, or a NodeImpl
// naming the compat/bench script that wraps the implementation in the shared harness
// (compat/bench/harness.js).
package bench
