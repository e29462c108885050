// Package stocknode runs the stock Medusa lock provider (@medusajs/locking-redis 2.21.2, installed
// in compat/node_modules) in a Node child process, so Go tests can put it next to the Go
// provider on one Redis.
//
// Start spawns `node compat/stock/driver.js` (Script) for one test with internal/nodeproc, the
// Node child-process driver the benchmark uses too, and kills it when the test ends. The driver
// builds the provider the way Medusa's module loader does and answers JSON-lines requests;
// the typed methods of Driver (Acquire, Release, ReleaseAll, Execute, ExecuteAsync) send one
// request each and return the stock provider's result or its error as an *Error that keeps the
// MedusaError type and message byte for byte.
//
// An Execute runs one of the driver's jobs: ValueJob returns a value, HoldJob runs until the test
// calls Execution.Finish (reporting when it started and when its AbortSignal fired), and BuyJob
// is the "buy" of Medusa's own locking test: it decrements a stock counter in Redis and counts
// overlapping jobs, so a test can prove mutual exclusion across processes and languages.
//
// A test needing node never skips: when node or compat/node_modules (Packages) is missing it
// fails with an install hint (nodeproc.InstallHint, nodeproc.DepsHint).
package stocknode
