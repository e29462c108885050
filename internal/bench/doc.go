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
// Multi-process scenarios (MultiScenario) run several runner processes on one key at once: Node
// runners, and Go worker processes (GoProcessImpl: the program itself, started with WorkerEnv
// set, serving the Go runner over the same protocol as the Node runners). Every runner opens its
// window at one wall-clock time (Spec.StartAtUnixMs) and records when each critical section
// started, so hand-offs are ordered across processes. The cluster scenarios run the Go provider
// on a local Redis Cluster that Run starts (StartCluster).
//
// Adding an implementation is one entry in Implementations: an in-process Go Impl, or a NodeImpl
// naming the compat/bench script that wraps the implementation in the shared harness
// (compat/bench/harness.js).
package bench
