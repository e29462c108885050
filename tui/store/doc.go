// Package store is the console's model of the lock namespace: pure Go, no I/O, no goroutines,
// so every rule the screen shows is unit-testable with an explicit clock.
//
// Observations (from SCAN polling, keyspace-notification reads and sampling) and lock events
// (from pub/sub) go in; a View comes out: the filtered, sorted rows of each screen, built by
// Store.Build off the UI goroutine. Entries are immutable once published, so a View can be
// rendered while the store moves on; an entry whose lock did not change is reused, so a refresh
// of unchanged locks allocates nothing per lock.
//
// The state of a lock, in words so that nothing depends on colour:
//
//	GONE      released or expired less than GoneFor ago
//	NO TTL    never expires: the first suspect for a stuck owner
//	RENEWED   its TTL jumped up (or a "renewed" event came) less than RenewedFor ago
//	EXPIRING  under ExpiringFraction of its lease (the highest TTL seen) or under ExpiringFloor
//	HELD      everything else
//
// Contention per key comes from lock events (waiting, acquired, gave_up, lost): current
// waiters, attempts and contended attempts per second, and a per-second history for the
// sparkline; owner hand-offs seen by polling or sampling count as contention too.
package store
