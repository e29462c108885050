// Package bench measures lock implementations side by side against one Redis: the Go provider
// in-process, Node implementations (stock @medusajs/locking-redis, and the bridge client
// compat/medusa-locking-bridge talking to a Go bridge that StartBridge builds and starts for the
// run) as child processes running compat/bench scripts, and, in the single-process scenarios,
// peers from outside the project in-process (Peers: bsm/redislock, go-redsync and a bare SET NX
// loop), on the Go provider's client options.
//
// Every implementation runs the same scenarios with the same worker loop (see Scenario) and
// reports the same raw observations (Raw); the metrics are then computed here, once, from those
// observations, so "p99" or "fairness" mean exactly the same thing for every implementation.
// MetricsDoc describes each metric; it is embedded in the report. Around every window the run
// also reads the Redis server itself (INFO cpu and commandstats before and after; a SCAN before
// and after the run): its CPU and the commands it ran per execute, and the keys the run left.
//
// Multi-process scenarios (MultiScenario) run several runner processes on one key at once: Node
// runners, and Go worker processes (GoProcessImpl: the program itself, started with WorkerEnv
// set, serving the Go runner over the same protocol as the Node runners). Every runner opens its
// window at one wall-clock time (Spec.StartAtUnixMs) and records when each critical section
// started, so hand-offs are ordered across processes. The cluster scenarios run the Go provider
// on a local Redis Cluster that Run starts (redisproc.StartCluster).
//
// Adding an implementation is one entry in Implementations: an in-process Go Impl (a PeerImpl
// needs only an Executor), or a NodeImpl naming the compat/bench script that wraps the
// implementation in the shared harness (compat/bench/harness.js).
package bench
