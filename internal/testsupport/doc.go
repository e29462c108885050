// Package testsupport is where the module's test support lives: here, Main (what a test
// binary sets up around its tests, and its goroutine leak check) and Buffer (output shared
// between a command's goroutines and the test); below it, one package each:
//
//   - redistest: a private redis-server, a Sentinel deployment or a Redis Cluster for a test,
//     a server that never answers, and a go-redis hook that records the commands a client sends
//     (and can fail or delay chosen ones);
//   - faultproxy: an in-process TCP proxy that injects network faults;
//   - stocknode: stock Medusa's lock provider in a Node child process;
//   - pgtest: a private PostgreSQL for the Medusa backend of e2e/;
//   - locktest: the environment the provider's and the operator's suites share (a provider and
//     an operator's Inspector in a fresh namespace, a raw client, the assertions on stored keys).
//
// They import "testing", and only tests import them: no product package (one built into
// cmd/locktui, cmd/bridge or cmd/bench) may, which TestNoProductPackageImportsTestSupport checks.
// What a product shares with the tests lives in product-safe packages that these wrap with
// testing.TB helpers: internal/redisproc (redis-server processes, a local Cluster) and
// internal/nodeproc (Node child processes, compat/ and its npm packages).
package testsupport
