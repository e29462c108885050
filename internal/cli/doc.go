// Package cli is the locktui command line: list, acquire, release, release-all and run
// (flock(1) for Medusa locks) for scripts and cron jobs, plus the entry points of the
// interactive console and the demo, which the main package injects.
//
// Everything a command needs comes through App (output writers, environment, console), so the
// package holds no global state and tests drive App.Run with arguments and buffers.
//
// Flags may appear before or after the command and between its arguments, as --flag value or
// --flag=value (a single dash works too); "--" ends the flags. Exit codes are the Exit*
// constants and are listed in the usage text.
//
// Decisions the issue left open:
//   - list --json includes keys under the namespace that are not locks (another Redis type)
//     with "foreign": true; the field is absent for locks.
//   - acquire without --expire takes a lock that never expires (stock semantics) and warns on
//     stderr; an explicit --expire 0 asks for the same thing knowingly and does not warn.
//   - acquire, release and release-all require --owner ("*" names the anonymous owner
//     explicitly); an empty owner is refused, because the provider cannot store it.
//   - release-all exits 0 also when it released nothing.
//   - run resolves the command before it takes the lock, so a missing command (exit 127)
//     never takes the lock at all.
//   - run forwards SIGINT, SIGTERM and SIGHUP to the command. In a terminal, Ctrl-C reaches the
//     command from the terminal as well, so it may see SIGINT twice.
package cli
