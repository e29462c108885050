// Package source is the console's Redis side: it reads the namespace (full refreshes through
// operator.Inspector.ScanWith paced to a budget, targeted reads after keyspace notifications,
// time-boxed sampling), checks the server (PING, INFO, CONFIG GET), and feeds what it reads, with the lock
// events from pub/sub, into a Hub: the one goroutine that owns the store and hands out Views.
// The Watcher owns the loops that do it while the console runs (heartbeat, refreshes, keyspace
// and lock-event feeds, re-reads of countdowns at zero), one goroutine each, paced and retried
// with Backoff, and hands the program a status snapshot (Update) on every change.
//
// # Cost
//
// What the console sends and how much is stated once, in docs/console-cost.md. Here it is
// made of: the budget.Limiter (budget.Default units a second, a SCAN charged ScanCount, a read
// one) through which Scan and Read pace every read the console makes by itself; ReadUnpaced for
// what the operator asked for by name and for sampling; the Keyspace feed, which coalesces
// notifications and says when some may have been lost; RereadExpired, which reads again the
// keys whose countdown reached zero without news; and DriftInterval with IdleBudget, the
// spacing of full refreshes while notifications keep the table live.
package source
