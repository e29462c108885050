// Package pgtest starts a private PostgreSQL server for a test: initdb in a new temporary
// directory, postgres on a free loopback port (trust authentication, no fsync), stopped and
// removed when the test ends. Tests never touch a server the machine runs on 5432, and never
// skip: when the server binaries are missing the test fails with a message saying how to install
// them (InstallHint).
//
// initdb and postgres refuse to run as root; a test running as root runs them as the `postgres`
// system user (which the Debian packages create), in a directory owned by that user. Clients
// (CreateDB, Query, and the programs under test through URL) connect over TCP as the database
// superuser "postgres", from any user.
//
// The binaries (initdb, postgres, createdb, psql) are looked up beside initdb on PATH, symbolic
// links followed (Homebrew, most distributions), else in /usr/lib/postgresql/<version>/bin
// (Debian and Ubuntu, which keep them off PATH), the highest version first.
package pgtest
