// Package source is the console's Redis side: it reads the namespace (full refreshes through
// operator.Inspector.ScanWith paced to a budget, targeted reads after keyspace notifications,
// time-boxed sampling), checks the server (PING, INFO, CONFIG GET), and applies what it reads,
// with the lock events from pub/sub, to a Hub, which owns the store and hands out Views.
//
// # Where the pacing is
//
// Two rules pace everything the console does by itself, each stated once:
//
//   - What it may send to Redis: the budget.Limiter of the Source (see Cost below). Every read
//     it makes by itself waits there; nothing else paces reads.
//   - When it does what: the Scheduler (scheduler.go). The Watcher owns one, and every periodic
//     or triggered piece of work of the console is one of its Jobs, each with its due time
//     (Every, Delay, Gap), its gate (Ready) and one backoff (Retry, from RetryMin doubling to
//     RetryMax, never sooner than Every). No job sleeps, ticks or retries by itself.
//
// The Watcher's jobs (jobs.go, sampling.go, and the hub's in hub.go):
//
//	heartbeat  PING every HeartbeatEvery, INFO once per connection; says when Redis is down,
//	           urges a refresh when it answers again
//	refresh    the full refreshes, every Status.Interval (the poll interval, or DriftInterval
//	           while notifications keep the table live), urged by Watcher.Refresh
//	keyspace   subscribes to keyspace notifications, then reads the keys they name, triggered
//	           by them after keyspaceCoalesce
//	events     subscribes to the lock events and forwards them to the hub (or forwards those
//	           of WatchOptions.EventsFrom)
//	reread     reads again the keys whose countdown reached zero, triggered by the hub, at
//	           most every expiryEvery
//	sampling   the operator's sampling run (Watcher.Sample), a step every SampleInterval
//	build      the Hub's Views, triggered by every change, urged by a new query, at least
//	           every second
//
// The Scheduler starts one goroutine per job and Watcher.Run returns when all ended; the only
// other goroutine this package starts is a keyspace subscription's reader of Redis' pushes. The program gets what
// the jobs know as values it owns: Updates (a Status snapshot and a notice) from Watcher.Next
// and immutable Views from Hub.Next; it never schedules any of this work.
//
// # Cost
//
// What the console sends and how much is stated once, in docs/console-cost.md. Here it is
// made of: the budget.Limiter (budget.Default units a second, a SCAN charged ScanCount, a read
// one) through which Scan and Read pace every read the console makes by itself; ReadUnpaced for
// what the operator asked for by name and for sampling; the Keyspace feed, which coalesces
// notifications and says when some may have been lost; the reread job, which reads again the
// keys whose countdown reached zero without news; and DriftInterval with IdleBudget, the
// spacing of full refreshes while notifications keep the table live.
package source
