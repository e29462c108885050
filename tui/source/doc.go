// Package source is the console's Redis side: it reads the namespace (SCAN polling paced to a
// command budget, targeted reads after keyspace notifications, time-boxed sampling), checks the
// server (PING, INFO, CONFIG GET), and feeds what it reads, with the lock events from pub/sub,
// into a Hub: the one goroutine that owns the store and hands out Views.
//
// # Command budget
//
// A full refresh of N locks costs ceil(N/100) SCAN + N GET + N PTTL commands in ceil(N/100)
// round trips (one SCAN and one pipeline of GET and PTTL per batch of 100 keys). Every read the
// console makes by itself (refreshes and keyspace reads) draws from one token bucket of
// DefaultBudget commands per second, so however many locks there are the console never sends
// more than that on average over a second (one batch, 201 commands, may run ahead). With many
// locks a refresh therefore takes longer, and the poll interval grows to match: 100,000 locks
// are re-read every ~10 s at 20,000 commands/s. PING once a second, and INFO server plus
// CONFIG GET once per connection, come on top. Sampling, which the user starts for a limited
// time, states its own cost on screen.
package source
