// Package cli is the locktui command line: list, get, acquire, release, release-all and run
// (flock(1) for Medusa locks) for scripts and cron jobs, version, shell completion, plus the
// entry points of the interactive console and the demo, which the main package injects.
//
// Everything a command needs comes through App (output writers, environment, console), so the
// package holds no global state and tests drive App.Run with arguments and buffers. Each Run
// builds its own command tree on github.com/spf13/cobra (commands.go): subcommands, flag
// parsing (spf13/pflag, GNU style), help and completion (locktui completion bash|zsh|fish|
// powershell, with lock keys and owners completed from Redis).
//
// Flags may appear before or after the command and between its arguments, as --flag value or
// --flag=value; "--" ends the flags. A long flag written with a single dash (-redis URL), as
// locktui accepted before it followed GNU conventions, still works. A boolean flag takes no
// separate value, and a lone "true" or "false" right after one is a usage error ("release KEY
// --force false" would otherwise force-release a key called "false" too): write --force=false.
// Every command-line mistake is one "locktui: …" line and a hint to the help on stderr, exit 2;
// the parser's messages are reworded in one place (flagError). Exit codes are the Exit*
// constants and are listed in the help.
//
// release and release-all audit every key they touch, like the console, through the same
// ConsoleConfig.OpenAudit: to --audit-log (default audit.DefaultPath()) and to --audit-stream
// when given, with operator audit.Operator():
//   - release --force: one force_release_any record per distinct key with the owner the key had
//     (empty when it was not held) and the result released, not_held or error.
//   - release --owner: one force_release record per distinct key with OWNER. audit/ has no
//     plain "release" action, and none is needed: an owner-checked release of one key is the
//     compare-and-delete the console's d performs (d also compares the hold it showed: its
//     token and holding process) and audits under that name, so one action means one
//     operation whichever tool did it.
//   - release-all: a release_owner record with the owner, the number of locks released
//     (result not_held when 0) and, in locks, each lock released with the holder it cut off,
//     as read in the same paced walk just before its delete; past audit.DefaultLocksPerRecord
//     locks, in parts (see audit.Record.Part).
//   - acquire and run are not audited: they take locks under an owner and give back only their
//     own.
//
// The trail is opened before anything is released; when it cannot be (no home directory, an
// unwritable path) the command changes nothing and exits 1. A record that cannot be written
// after the release happened (disk full, the stream unreachable or of another type) is one
// "locktui: warning: could not audit …" line on stderr, and the exit code stays the release's
// own (0 or 3): it tells scripts what happened to the locks, which a failed audit write does
// not undo, as run's warning about a lease it could not give back leaves its code alone.
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
//   - run's command dies with locktui on Linux: it is started with a parent-death signal
//     (SIGKILL), so a locktui killed with SIGKILL or by the OOM killer does not leave it running
//     without the lock after the lease expires. The signal covers the command's process only
//     (not processes it starts without exec) and is cleared when it execs a set-user-ID,
//     set-group-ID or file-capability program. Other systems have no such signal here: there
//     the command outlives a killed locktui, and the lock expires under it.
//   - release --owner of a key that is not a lock (another Redis type) is a conflict ("not a
//     lock", exit 3), as for --force, not a Redis error.
//   - run --timeout 0 (flock -n) makes one attempt: the provider's event for the start of a wait
//     ends the acquisition at once. --conflict-exit-code N (flock -E) replaces 75 for both a
//     timeout and that refusal; 0 to 255 are accepted (0 lets a cron job skip a busy lock
//     quietly in its exit status). The message names the key waited for and who holds it.
//   - run reports a lost lease as the error it exits 76 with, saying how it was lost (the key
//     was deleted, taken by whom, replaced by another type, the lease expired because renewals
//     failed, or the server restarted); the provider's own warning of that loss is not printed
//     as well. The explanation reads Redis beside the supervision loop, so it never delays a
//     SIGKILL.
//   - A Redis that cannot be reached is retried (connect): for 5 s by the commands that do not
//     wait, within --timeout or --wait by run and acquire --wait, whose provider wait rides out
//     what comes later. A wait that ends while Redis still cannot be reached exits 1, not with
//     the conflict's code (3, 75 or --conflict-exit-code): nobody may hold the keys, and a cron
//     job that skips a busy lock quietly must not skip an outage quietly.
//   - get KEY exits 3 when the key does not exist (after printing what it found, also with
//     --json: exists false, type "none").
//   - list --owner matches the owner exactly ("*" is the anonymous owner, not a pattern);
//     --match is a Redis glob on the key without the namespace, case-sensitive like SCAN
//     MATCH; --no-ttl keeps keys that never expire, foreign keys included. They filter what
//     the namespace scan returns (paced by pacedScan, as the walks of release-all and of
//     completion are).
//   - version prints the module version (App.Version overrides it), the VCS revision ("
//     (modified)" for a dirty tree) and commit time, and the Go version, from the build
//     information; "(devel)" and "unknown" where the build recorded none.
package cli
