// Package source is the console's Redis side: it reads the namespace (SCAN polling paced to a
// budget, targeted reads after keyspace notifications, time-boxed sampling), checks the
// server (PING, INFO, CONFIG GET), and feeds what it reads, with the lock events from pub/sub,
// into a Hub: the one goroutine that owns the store and hands out Views.
//
// # Command budget
//
// SCAN … MATCH walks the whole database, not only the namespace, and examines about COUNT keys
// per call whatever it returns. A full refresh of a database of K keys holding N locks
// therefore costs about K/100 SCAN (COUNT 100) + N GET + N PTTL + N HGETALL (holder records)
// commands in about K/100 round trips (one SCAN and one pipeline of GET, PTTL and HGETALL per
// batch: provider.ScanWith, the walk the
// CLI's list takes too, paced through its hook). Every read the console makes by
// itself (refreshes and keyspace reads) draws from one token bucket of DefaultBudget units per
// second, in which a SCAN is charged ScanCost (the 100 keys it examines) and a GET or PTTL one,
// so however large the database the console never has Redis examine or read more than that on
// average over a second (one batch may run ahead). With a large database a refresh therefore
// takes longer, and the poll interval grows to match: a database of 100,000 locks is re-read
// every ~15 s at 20,000 units/s, one of 500,000 other keys and a few locks every ~25 s. PING
// once a second, and INFO server, DBSIZE and CONFIG GET once per connection, come on top, as do
// the two reads of an exact lookup or of the re-read after a release, which the operator asked
// for by name. Sampling, which the user starts for a limited time, states its own cost on
// screen.
package source
